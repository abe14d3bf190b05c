// Device 0 for the C++ suites that run on whatever driver is there (the fake one in CI, a real
// one on the GPU machine), and the Boost.Test precondition that skips their gpu cases, with the
// reason, where there is no driver or no device. One copy for the allocator and rng contracts and
// the pool's event fences, so that each says "no device" the same way.
#pragma once

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <boost/test/unit_test.hpp>

#include <exception>
#include <optional>
#include <string>

namespace cuplug::test {

// Device 0 after cuInit; nullopt, with the reason in `why`, without a driver or a device (or
// when a driver call fails: its error is the reason).
inline std::optional<CUdevice> first_device(std::string &why) {
  try {
    if (!driver_available()) {
      why = "no CUDA driver: " + driver_library_description();
      return std::nullopt;
    }
    CUPLUG_CALL(cuInit, 0);
    int count = 0;
    CUPLUG_CALL(cuDeviceGetCount, &count);
    if (count == 0) {
      why = "the driver reports no device";
      return std::nullopt;
    }
    CUdevice dev = 0;
    CUPLUG_CALL(cuDeviceGet, &dev, 0);
    return dev;
  } catch (const std::exception &e) {
    why = e.what();
    return std::nullopt;
  }
}

// Makes device 0's primary context (retained once per process) current on the calling thread;
// false, with the reason in `why`, when there is no driver or no device.
inline bool make_gpu_current(std::string *why = nullptr) {
  static CUcontext ctx = nullptr;
  static std::string failure;
  static const bool ok = [] {
    const std::optional<CUdevice> dev = first_device(failure);
    if (!dev)
      return false;
    try {
      CUPLUG_CALL(cuDevicePrimaryCtxRetain, &ctx, *dev);
      return true;
    } catch (const std::exception &e) {
      failure = e.what();
      return false;
    }
  }();
  if (ok)
    CUPLUG_CALL(cuCtxSetCurrent, ctx);
  else if (why)
    *why = failure;
  return ok;
}

// A precondition's answer: run, or skip saying `why`.
inline boost::test_tools::assertion_result run_if(bool ok, const std::string &why) {
  boost::test_tools::assertion_result r(ok);
  if (!r)
    r.message() << why;
  return r;
}

// Boost.Test precondition of the gpu suites: device 0's primary context is current, else the
// suite is skipped with the reason.
struct gpu_present {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    std::string why;
    const bool ok = make_gpu_current(&why);
    return run_if(ok, why);
  }
};

} // namespace cuplug::test
