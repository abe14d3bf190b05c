// The CUDA-event fences (core/src/pool/cuda_event_fences.cpp) against whatever driver is there: the
// fake one in test_pool_fake_gpu, a real one on the GPU machine; skipped without a device.
#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/pool/cuda_event_fences.hpp>

#include <boost/test/unit_test.hpp>

#include "support/gpu_present.hpp"

#include <optional>
#include <string>

namespace pool = cuplug::pool;

namespace {

// Two contexts of device 0, the first current; false (with the reason) without a device.
struct two_contexts {
  CUcontext first = nullptr, second = nullptr;
  std::string why;
  bool ok = false;
  two_contexts() {
    const std::optional<CUdevice> dev = cuplug::test::first_device(why);
    if (!dev)
      return;
    try {
      CUPLUG_CALL(cuCtxCreate, &second, nullptr, 0, *dev);
      CUPLUG_CALL(cuCtxPopCurrent, &second);
      CUPLUG_CALL(cuDevicePrimaryCtxRetain, &first, *dev);
      CUPLUG_CALL(cuCtxSetCurrent, first);
      ok = true;
    } catch (const std::exception &e) {
      why = e.what();
    }
  }
};

two_contexts &contexts() {
  static two_contexts c;
  return c;
}

struct device_present {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    return cuplug::test::run_if(contexts().ok, contexts().why);
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_event_fences, *boost::unit_test::label("gpu") *
                                             boost::unit_test::precondition(device_present()))

BOOST_AUTO_TEST_CASE(the_domain_is_the_current_context) {
  pool::cuda_event_fences f;
  CUPLUG_CALL(cuCtxSetCurrent, contexts().first);
  BOOST_TEST(f.domain() == reinterpret_cast<std::uintptr_t>(contexts().first));
  CUPLUG_CALL(cuCtxSetCurrent, contexts().second);
  BOOST_TEST(f.domain() == reinterpret_cast<std::uintptr_t>(contexts().second));
  CUPLUG_CALL(cuCtxSetCurrent, nullptr);
  BOOST_TEST(f.domain() == 0u);
  CUPLUG_CALL(cuCtxSetCurrent, contexts().first);
}

BOOST_AUTO_TEST_CASE(released_events_are_reused_within_their_context_only) {
  pool::cuda_event_fences f;
  CUPLUG_CALL(cuCtxSetCurrent, contexts().first);
  const std::uintptr_t first = f.domain();
  const pool::fence_t a = f.record(nullptr, first);
  BOOST_TEST(a != 0u);
  f.wait(nullptr, a);
  f.synchronize(a);
  f.release(a);
  BOOST_TEST(f.record(nullptr, first) == a); // recycled, no new event
  CUPLUG_CALL(cuCtxSetCurrent, contexts().second);
  const pool::fence_t b = f.record(nullptr, f.domain());
  BOOST_TEST(b != a); // an event of the other context
  f.synchronize(b);
  f.release(b);
  f.release(a);
  f.release(0); // no fence: nothing to give back
  CUPLUG_CALL(cuCtxSetCurrent, contexts().first);
}

BOOST_AUTO_TEST_SUITE_END()

// What needs no driver call.
BOOST_AUTO_TEST_SUITE(stream_fences)

BOOST_AUTO_TEST_CASE(the_legacy_and_per_thread_streams_are_told_apart) {
  pool::cuda_event_fences f;
  BOOST_TEST(f.needs_fences());
  BOOST_TEST(f.persistent(nullptr));
  BOOST_TEST(f.persistent(CU_STREAM_LEGACY));
  BOOST_TEST(!f.persistent(CU_STREAM_PER_THREAD));
  BOOST_TEST(!f.same_stream(CU_STREAM_PER_THREAD, CU_STREAM_PER_THREAD));
  BOOST_TEST(f.same_stream(nullptr, nullptr));
}

BOOST_AUTO_TEST_CASE(memory_kinds_get_the_fences_they_need) {
  BOOST_TEST(!pool::make_fences(cuplug::memory_kind::host)->needs_fences());
  for (auto kind : {cuplug::memory_kind::device, cuplug::memory_kind::managed,
                    cuplug::memory_kind::pinned_host})
    BOOST_TEST(pool::make_fences(kind)->needs_fences());
}

BOOST_AUTO_TEST_SUITE_END()
