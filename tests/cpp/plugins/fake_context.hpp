// A current context on the fake driver's device 0 for plugin tests (retained primary context).
#pragma once

#include <cuplug/driver_api.hpp>

#include <fake_cuda.h>

#include <boost/test/unit_test.hpp>

#include <string>

struct fake_context {
  fake_context() {
    const std::string driver = cuplug::driver_library_description();
    BOOST_REQUIRE_MESSAGE(
        driver.find("cuplug_fake_cuda") != std::string::npos,
        "run through ctest, which points CUPLUG_CUDA_DRIVER at the fake: " << driver);
    CUPLUG_CALL(cuInit, 0);
    CUPLUG_CALL(cuDeviceGet, &device, 0);
    CUPLUG_CALL(cuDevicePrimaryCtxRetain, &context, device);
    CUPLUG_CALL(cuCtxSetCurrent, context);
  }
  ~fake_context() {
    fake_cuda_clear_faults();
    cuplug::driver().cuCtxSetCurrent(nullptr);
    cuplug::driver().cuDevicePrimaryCtxRelease(device);
  }
  CUdevice device = 0;
  CUcontext context = nullptr;
};
