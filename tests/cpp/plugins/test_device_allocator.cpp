// Tests plugins/allocator_device against the fake driver: cuMemAlloc/cuMemFree, out of memory.
#define BOOST_TEST_MODULE device_allocator
#include <boost/test/included/unit_test.hpp>

#include "fake_context.hpp"
#include "test_support.hpp"

#include <cuplug/allocator.hpp>
#include <cuplug/errors.hpp>

using namespace cuplug;

namespace {

plugin_ptr<allocator> make() {
  return registry::instance().create<allocator>(plugin_kind::allocator, "device", options());
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(device_allocator_tests, fake_context)

BOOST_AUTO_TEST_CASE(allocates_and_frees_device_memory) {
  auto a = make();
  const std::size_t live = fake_cuda_live_allocations();
  const std::uintptr_t p = a->allocate(1000);
  const std::uintptr_t q = a->allocate(24, reinterpret_cast<CUstream>(0)); // any stream
  BOOST_TEST(p != 0u);
  BOOST_TEST(q != p);
  BOOST_TEST(fake_cuda_live_allocations() == live + 2);
  // The driver knows the address as a device allocation of that size.
  CUdeviceptr base = 0;
  std::size_t size = 0;
  CUPLUG_CALL(cuMemGetAddressRange, &base, &size, static_cast<CUdeviceptr>(p));
  BOOST_TEST(base == static_cast<CUdeviceptr>(p));
  BOOST_TEST(size == 1000u);
  BOOST_TEST(a->stats().bytes_in_use == 1024u);
  a->deallocate(p, 1000);
  a->deallocate(q, 24);
  BOOST_TEST(fake_cuda_live_allocations() == live);
  const allocator_stats s = a->stats();
  BOOST_TEST(s.allocations == 2u);
  BOOST_TEST(s.deallocations == 2u);
  BOOST_TEST(s.peak_bytes == 1024u);
  BOOST_TEST(s.bytes_in_use == 0u);
}

BOOST_AUTO_TEST_CASE(out_of_memory_says_how_much_was_asked_and_free) {
  auto a = make();
  const std::uintptr_t held = a->allocate(4096);
  const std::size_t too_much = std::size_t(1) << 50;
  try {
    (void)a->allocate(too_much);
    BOOST_ERROR("a petabyte was allocated");
  } catch (const out_of_memory &e) {
    const std::string msg = e.what();
    BOOST_TEST(e.requested() == too_much);
    BOOST_TEST(msg.rfind("cuMemAlloc failed: out of memory - requested " +
                             std::to_string(too_much) + " bytes; in use 4096",
                         0) == 0u,
               msg);
    CHECK_CONTAINS(msg, "bytes free");
  }
  BOOST_TEST(a->stats().failures == 1u);
  a->deallocate(held, 4096); // still usable
}

BOOST_AUTO_TEST_CASE(other_failures_are_cuda_errors) {
  auto a = make();
  fake_cuda_fail_next("cuMemAlloc", CUDA_ERROR_INVALID_CONTEXT, 1);
  try {
    (void)a->allocate(16);
    BOOST_ERROR("no error");
  } catch (const cuda_error &e) {
    BOOST_TEST(std::string(e.what()) == "cuMemAlloc failed: invalid device context");
  }
  // A failed free is reported, not thrown, and counted.
  const std::uintptr_t p = a->allocate(16);
  fake_cuda_fail_next("cuMemFree", CUDA_ERROR_INVALID_VALUE, 1);
  a->deallocate(p, 16);
  BOOST_TEST(a->stats().failures == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
