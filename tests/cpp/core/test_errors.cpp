// Tests core/src/errors.cpp: PyCUDA's sorting of CUresults, messages, typed errors.
// Runs with CUPLUG_CUDA_DRIVER pointing nowhere, so descriptions come from the built-in table.
#define BOOST_TEST_MODULE errors
#include <boost/test/included/unit_test.hpp>

#include "test_support.hpp"

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <cuda.h>

using namespace cuplug;

BOOST_AUTO_TEST_CASE(classifies_every_result_as_pycuda_does) {
  BOOST_TEST((classify(CUDA_ERROR_UNKNOWN) == error_class::unknown));
  BOOST_TEST((classify(CUDA_ERROR_OUT_OF_MEMORY) == error_class::memory));
  for (CUresult r : {CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                     CUDA_ERROR_LAUNCH_TIMEOUT, CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING})
    BOOST_TEST((classify(r) == error_class::launch), "code " << r);
  for (CUresult r : {CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_FILE_NOT_FOUND,
                     CUDA_ERROR_NOT_READY, CUDA_ERROR_ECC_UNCORRECTABLE})
    BOOST_TEST((classify(r) == error_class::runtime), "code " << r);
  for (CUresult r :
       {CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_DEINITIALIZED,
        CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE,
        CUDA_ERROR_NOT_FOUND, CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_INVALID_PTX,
        CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED})
    BOOST_TEST((classify(r) == error_class::logic), "code " << r);
  BOOST_TEST((classify(123456) == error_class::logic)); // PyCUDA: everything else
}

BOOST_AUTO_TEST_CASE(cuda_error_reads_like_pycuda) {
  const cuda_error plain("cuMemGetInfo", CUDA_ERROR_INVALID_CONTEXT);
  BOOST_TEST(std::string(plain.what()) == "cuMemGetInfo failed: invalid device context");
  BOOST_TEST(plain.code() == CUDA_ERROR_INVALID_CONTEXT);
  BOOST_TEST(plain.routine() == "cuMemGetInfo");
  BOOST_TEST((plain.classification() == error_class::logic));

  const cuda_error extra("explicit_context_dependent", CUDA_ERROR_INVALID_CONTEXT,
                         "no currently active context?");
  BOOST_TEST(std::string(extra.what()) ==
             "explicit_context_dependent failed: invalid device context - no currently active "
             "context?");
  BOOST_TEST(std::string(cuda_error("cuLaunchKernel", CUDA_ERROR_LAUNCH_FAILED).what()) ==
             "cuLaunchKernel failed: unspecified launch failure");
  BOOST_TEST((cuda_error("cuLaunchKernel", CUDA_ERROR_LAUNCH_FAILED).classification() ==
              error_class::launch));
}

BOOST_AUTO_TEST_CASE(unknown_codes_still_get_a_message) {
  const std::string msg = cuda_error("cuFoo", 987654).what();
  BOOST_TEST(msg.rfind("cuFoo failed: ", 0) == 0u);
  BOOST_TEST(msg.find("987654") != std::string::npos, msg);
  BOOST_TEST(error_name(CUDA_ERROR_OUT_OF_MEMORY) == "CUDA_ERROR_OUT_OF_MEMORY");
  BOOST_TEST(error_string(CUDA_ERROR_OUT_OF_MEMORY) == "out of memory");
}

BOOST_AUTO_TEST_CASE(out_of_memory_carries_what_the_allocator_knew) {
  const out_of_memory e("memory_pool::allocate", 1 << 20, 4096, 512, 1 << 30, "pool 'p'");
  const std::string msg = e.what();
  BOOST_TEST(msg.rfind("memory_pool::allocate failed: out of memory - ", 0) == 0u, msg);
  BOOST_TEST(msg.find(std::to_string(1 << 20)) != std::string::npos, msg);
  BOOST_TEST(msg.find("pool 'p'") != std::string::npos, msg);
  BOOST_TEST(e.requested() == std::size_t(1) << 20);
  BOOST_TEST(e.code() == CUDA_ERROR_OUT_OF_MEMORY);
  BOOST_TEST((e.classification() == error_class::memory));
  const cuda_error &base = e; // caught as cuda_error, it is still a memory error
  BOOST_TEST((base.classification() == error_class::memory));
}

BOOST_AUTO_TEST_CASE(typed_errors_share_one_base) {
  const compile_error c("compilation failed", "kernel.cu(1): error: x", "nvrtc -arch=sm_90");
  BOOST_TEST(c.log() == "kernel.cu(1): error: x");
  BOOST_TEST(c.command() == "nvrtc -arch=sm_90");
  BOOST_TEST(std::string(c.what()) == "compilation failed");
  BOOST_CHECK_THROW(throw plugin_error("p"), error);
  BOOST_CHECK_THROW(throw not_supported("n"), error);
  BOOST_CHECK_THROW(throw config_error("c"), error);
  BOOST_CHECK_THROW(throw compile_error("m", "", ""), error);
  BOOST_CHECK_THROW(throw out_of_memory("r", 1, 0, 0, 0), cuda_error);
  BOOST_CHECK_THROW(throw cuda_error("r", 1), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(check_throws_for_failures_only) {
  BOOST_CHECK_NO_THROW(check(CUDA_SUCCESS, "cuInit"));
  BOOST_CHECK_THROW(check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"), out_of_memory);
  try {
    check(CUDA_ERROR_INVALID_VALUE, "cuMemcpy");
    BOOST_ERROR("no throw");
  } catch (const cuda_error &e) {
    BOOST_TEST(std::string(e.what()) == "cuMemcpy failed: invalid argument");
  }
}

BOOST_AUTO_TEST_CASE(a_missing_driver_is_explained_every_time) {
  BOOST_TEST(!driver_available());
  BOOST_TEST(driver_library_description().find("/nonexistent/libcuda.so.1") != std::string::npos);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      driver();
      BOOST_ERROR("driver() did not throw");
    } catch (const cuda_error &e) {
      BOOST_TEST(e.code() == CUDA_ERROR_NO_DEVICE);
      BOOST_TEST((e.classification() == error_class::runtime));
      BOOST_TEST(std::string(e.what()).find("/nonexistent/libcuda.so.1") != std::string::npos,
                 e.what());
      // The cause and the fix first, not "cuInit failed: no CUDA-capable device is detected".
      BOOST_TEST(std::string(e.what()).rfind("the CUDA driver library '", 0) == 0, e.what());
      BOOST_TEST(std::string(e.what()).find("install the NVIDIA driver") != std::string::npos,
                 e.what());
      BOOST_TEST(e.routine() == "cuInit");
    }
  }
  BOOST_CHECK_THROW(CUPLUG_CALL(cuInit, 0), cuda_error);
  BOOST_TEST(driver_symbol("cuInit") == nullptr);
}
