// The allocator contract: what every allocator backend must do, as functions over a factory,
// and the macro that makes one Boost.Test suite of them per backend.
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>

#include <boost/test/unit_test.hpp>

#include "support/gpu_present.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace cuplug::test {

// One backend under test.
struct allocator_case {
  std::function<plugin_ptr<allocator>()> make;
  memory_kind kind;
  bool gpu = false; // needs a CUDA context (device, fake or real)
  bool huge = true; // a 5 GiB allocation is expected to succeed
};

namespace contract {

inline bool host_visible(memory_kind k) { return k != memory_kind::device; }

// Fills [p, p + n) with `tag` (n capped, so huge blocks stay cheap) and checks it back.
inline void fill(const allocator_case &c, device_ptr p, std::size_t n, unsigned char tag) {
  n = std::min<std::size_t>(n, 4096);
  if (host_visible(c.kind)) {
    if (c.kind == memory_kind::managed)
      CUPLUG_CALL(cuCtxSynchronize, nullptr);
    std::memset(reinterpret_cast<void *>(p), tag, n);
  } else {
    CUPLUG_CALL(cuMemsetD8, p, tag, n);
  }
}

inline bool holds(const allocator_case &c, device_ptr p, std::size_t n, unsigned char tag) {
  n = std::min<std::size_t>(n, 4096);
  std::vector<unsigned char> back(n);
  if (host_visible(c.kind)) {
    if (c.kind == memory_kind::managed)
      CUPLUG_CALL(cuCtxSynchronize, nullptr);
    std::memcpy(back.data(), reinterpret_cast<void *>(p), n);
  } else {
    CUPLUG_CALL(cuMemcpyDtoH, back.data(), p, n);
  }
  return std::all_of(back.begin(), back.end(), [&](unsigned char b) { return b == tag; });
}

inline plugin_ptr<allocator> make(const allocator_case &c) {
  if (c.gpu)
    make_gpu_current();
  plugin_ptr<allocator> a = c.make();
  BOOST_REQUIRE(a);
  return a;
}

inline void kind_and_zero_bytes(const allocator_case &c) {
  auto a = make(c);
  BOOST_TEST(to_string(a->kind()) == to_string(c.kind));
  BOOST_TEST(a->allocate(0) == 0u);
  a->deallocate(0, 0);
  a->deallocate(0, 100);
  const allocator_stats s = a->stats();
  BOOST_TEST(s.bytes_in_use == 0u);
  BOOST_TEST(s.allocations == 0u);
  BOOST_TEST(s.deallocations == 0u);
  BOOST_TEST(s.failures == 0u);
}

// Live blocks are non-null, aligned to allocation_alignment (256 bytes, the interface's
// promise), disjoint and hold what was written; the statistics count them.
inline void blocks_are_distinct_and_usable(const allocator_case &c) {
  auto a = make(c);
  const std::vector<std::size_t> sizes = {1, 7, 255, 256, 257, 4096, 65537, (1u << 20) + 3, 3000};
  std::vector<std::pair<device_ptr, std::size_t>> live;
  std::size_t total = 0;
  for (std::size_t n : sizes) {
    const device_ptr p = a->allocate(n);
    BOOST_TEST_REQUIRE(p != 0u);
    BOOST_TEST(p % allocation_alignment == 0u,
               "block of " << n << " bytes at 0x" << std::hex << p << " is not 256-byte aligned");
    live.emplace_back(p, n);
    total += n;
  }
  for (std::size_t i = 0; i < live.size(); ++i)
    fill(c, live[i].first, live[i].second, static_cast<unsigned char>(i + 1));
  for (std::size_t i = 0; i < live.size(); ++i)
    BOOST_TEST(holds(c, live[i].first, live[i].second, static_cast<unsigned char>(i + 1)),
               "block " << i << " was overwritten by another block");
  auto sorted = live;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i)
    BOOST_TEST(sorted[i - 1].first + sorted[i - 1].second <= sorted[i].first);

  allocator_stats s = a->stats();
  BOOST_TEST(s.bytes_in_use == total);
  BOOST_TEST(s.peak_bytes >= total);
  BOOST_TEST(s.allocations == sizes.size());
  for (const auto &[p, n] : live)
    a->deallocate(p, n);
  s = a->stats();
  BOOST_TEST(s.bytes_in_use == 0u);
  BOOST_TEST(s.deallocations == sizes.size());
  BOOST_TEST(s.peak_bytes >= total);
  BOOST_TEST(s.failures == 0u);
}

// peak_bytes is the highest bytes_in_use since creation or the last reset_peak(), which restarts
// it from the bytes in use then and leaves the other counters alone (the core keeps them, so
// every backend behaves alike).
inline void peak_restarts_from_in_use(const allocator_case &c) {
  auto a = make(c);
  const device_ptr big = a->allocate(3000);
  const device_ptr small = a->allocate(1000);
  BOOST_TEST(a->stats().peak_bytes == 4000u);
  a->deallocate(big, 3000);
  BOOST_TEST(a->stats().peak_bytes == 4000u);
  BOOST_TEST(a->reset_peak() == 4000u);
  allocator_stats s = a->stats();
  BOOST_TEST(s.peak_bytes == 1000u);
  BOOST_TEST(s.bytes_in_use == 1000u);
  BOOST_TEST(s.allocations == 2u);
  BOOST_TEST(s.deallocations == 1u);
  const device_ptr mid = a->allocate(500);
  BOOST_TEST(a->stats().peak_bytes == 1500u);
  a->deallocate(mid, 500);
  a->deallocate(small, 1000);
  BOOST_TEST(a->stats().peak_bytes == 1500u);
  BOOST_TEST(a->reset_peak() == 1500u);
  s = a->stats();
  BOOST_TEST(s.peak_bytes == 0u);
  BOOST_TEST(s.bytes_in_use == 0u);
  BOOST_TEST(s.allocations == 3u);
  BOOST_TEST(s.deallocations == 3u);
  BOOST_TEST(s.failures == 0u);
}

// Memory allocated for a stream is usable by it and may be freed on it; the default stream
// may reuse it afterwards.
inline void stream_ordered_use(const allocator_case &c) {
  auto a = make(c);
  CUstream stream = reinterpret_cast<CUstream>(0x100);
  if (c.gpu)
    CUPLUG_CALL(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  for (int round = 0; round < 3; ++round) {
    const device_ptr p = a->allocate(1 << 16, stream);
    BOOST_TEST_REQUIRE(p != 0u);
    if (c.gpu && !host_visible(c.kind))
      CUPLUG_CALL(cuMemsetD8Async, p, 0x5a, 1 << 16, stream);
    a->deallocate(p, 1 << 16, stream);
    const device_ptr q = a->allocate(1 << 16, nullptr);
    BOOST_TEST_REQUIRE(q != 0u);
    fill(c, q, 1 << 16, 0x33);
    BOOST_TEST(holds(c, q, 1 << 16, 0x33));
    a->deallocate(q, 1 << 16, nullptr);
  }
  if (c.gpu) {
    CUPLUG_CALL(cuStreamSynchronize, stream);
    CUPLUG_CALL(cuStreamDestroy, stream);
  }
  BOOST_TEST(a->stats().bytes_in_use == 0u);
}

// free_held / trim either work and leave nothing held, or say not_supported.
inline void held_memory_can_be_freed(const allocator_case &c) {
  auto a = make(c);
  std::vector<device_ptr> ps;
  for (std::size_t i = 0; i < 8; ++i)
    ps.push_back(a->allocate(1000 * (i + 1)));
  for (std::size_t i = 0; i < 8; ++i)
    a->deallocate(ps[i], 1000 * (i + 1));
  if (a->can_free_held()) {
    a->trim(0);
    a->free_held();
    BOOST_TEST(a->stats().bytes_held == 0u);
  } else {
    BOOST_TEST(a->stats().bytes_held == 0u);
    BOOST_CHECK_THROW(a->free_held(), not_supported);
    BOOST_CHECK_THROW(a->trim(0), not_supported);
  }
}

// A pool keeps PyCUDA's counters and obeys stop_holding, set_trace and the out-of-memory hook;
// any other allocator says it is not a pool: nullopt, and not_supported for the controls.
inline void pools_keep_their_counters(const allocator_case &c) {
  auto a = make(c);
  const std::optional<pool_stats> none = a->pool_statistics();
  if (!none) {
    BOOST_CHECK_THROW(a->stop_holding(), not_supported);
    BOOST_CHECK_THROW(a->set_trace(true), not_supported);
    BOOST_CHECK_THROW(a->set_out_of_memory_hook([] {}), not_supported);
    return;
  }
  BOOST_TEST(none->active_blocks == 0u);
  a->set_out_of_memory_hook([] {});
  a->set_trace(true);
  a->set_trace(false);
  const std::vector<std::size_t> sizes = {100, 5000, 70000};
  std::vector<device_ptr> live;
  for (std::size_t n : sizes)
    live.push_back(a->allocate(n));
  pool_stats s = *a->pool_statistics();
  BOOST_TEST(s.active_blocks == 3u);
  BOOST_TEST(s.active_bytes == 100u + 5000u + 70000u);
  BOOST_TEST(s.managed_bytes >= s.active_bytes + s.held_bytes);
  a->deallocate(live[0], sizes[0]);
  s = *a->pool_statistics();
  BOOST_TEST(s.active_blocks == 2u);
  BOOST_TEST(s.active_bytes == 5000u + 70000u);
  BOOST_TEST(s.held_blocks <= 1u);
  a->stop_holding();
  BOOST_TEST(a->pool_statistics()->held_blocks == 0u);
  a->deallocate(live[1], sizes[1]);
  a->deallocate(live[2], sizes[2]);
  s = *a->pool_statistics();
  BOOST_TEST(s.active_blocks == 0u);
  BOOST_TEST(s.held_blocks == 0u); // no longer holding: straight back to the upstream
  BOOST_TEST(s.managed_bytes == 0u);
  a->set_out_of_memory_hook({});
}

// An impossible request is a CUDA out-of-memory error, counted, and the allocator still works.
inline void out_of_memory_leaves_it_usable(const allocator_case &c) {
  auto a = make(c);
  const device_ptr keep = a->allocate(4096);
  try {
    (void)a->allocate(std::size_t{1} << 62);
    BOOST_ERROR("allocating 2^62 bytes succeeded");
  } catch (const cuda_error &e) {
    BOOST_TEST(e.code() == CUDA_ERROR_OUT_OF_MEMORY, e.what());
    BOOST_TEST(std::string(e.what()).find("out of memory") != std::string::npos, e.what());
  }
  BOOST_TEST(a->stats().failures == 1u);
  const device_ptr p = a->allocate(4096);
  BOOST_TEST(p != 0u);
  a->deallocate(p, 4096);
  a->deallocate(keep, 4096);
  BOOST_TEST(a->stats().bytes_in_use == 0u);
}

// More than 4 GiB in one block (PyCUDA's pool once stopped at 2^32); backends with a smaller
// capacity (an arena's slab) must refuse it with out of memory.
inline void blocks_beyond_4_gib(const allocator_case &c) {
  auto a = make(c);
  const std::size_t n = (std::size_t{5} << 30) + 12345;
  if (!c.huge) {
    try {
      (void)a->allocate(n);
      BOOST_ERROR("allocating 5 GiB succeeded where it was expected to fail");
    } catch (const cuda_error &e) {
      BOOST_TEST(e.code() == CUDA_ERROR_OUT_OF_MEMORY, e.what());
    }
    return;
  }
  const device_ptr p = a->allocate(n);
  BOOST_TEST_REQUIRE(p != 0u);
  fill(c, p, 64, 0x77);
  BOOST_TEST(holds(c, p, 64, 0x77));
  BOOST_TEST(a->stats().bytes_in_use == n);
  a->deallocate(p, n);
  if (a->can_free_held())
    a->free_held();
  BOOST_TEST(a->stats().bytes_in_use == 0u);
}

// Several threads allocating, writing and freeing at once never share a block.
inline void threads_never_share_blocks(const allocator_case &c) {
  auto a = make(c);
  constexpr int threads = 4, rounds = 300;
  std::vector<std::thread> pool;
  std::atomic<int> bad{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      if (c.gpu)
        make_gpu_current();
      std::mt19937 rng(t);
      std::vector<std::pair<device_ptr, std::size_t>> mine;
      for (int r = 0; r < rounds; ++r) {
        const std::size_t n = 64 + rng() % 20000;
        const device_ptr p = a->allocate(n);
        fill(c, p, n, static_cast<unsigned char>(t + 1));
        mine.emplace_back(p, n);
        if (mine.size() > 6 || rng() % 3 == 0) {
          const auto [q, m] = mine.front();
          if (!holds(c, q, m, static_cast<unsigned char>(t + 1)))
            ++bad;
          a->deallocate(q, m);
          mine.erase(mine.begin());
        }
      }
      for (const auto &[q, m] : mine) {
        if (!holds(c, q, m, static_cast<unsigned char>(t + 1)))
          ++bad;
        a->deallocate(q, m);
      }
    });
  }
  for (auto &th : pool)
    th.join();
  BOOST_TEST(bad.load() == 0);
  const allocator_stats s = a->stats();
  BOOST_TEST(s.bytes_in_use == 0u);
  BOOST_TEST(s.allocations == s.deallocations);
  BOOST_TEST(s.allocations == static_cast<std::size_t>(threads * rounds));
}

// Device memory: once everything is freed, held memory released and the allocator destroyed,
// the driver's free memory is back where it started, within one block (allocation granularity).
inline void driver_memory_returns_to_baseline(const allocator_case &c) {
  if (!c.gpu || host_visible(c.kind)) {
    BOOST_TEST_MESSAGE("not device memory: nothing to compare with the driver's free memory");
    return;
  }
  make_gpu_current();
  CUPLUG_CALL(cuCtxSynchronize, nullptr);
  std::size_t free_before = 0, free_after = 0, total = 0;
  CUPLUG_CALL(cuMemGetInfo, &free_before, &total);
  constexpr std::size_t largest = std::size_t{8} << 20;
  {
    auto a = make(c);
    std::vector<std::pair<device_ptr, std::size_t>> live;
    for (std::size_t n = 4096; n <= largest; n *= 2)
      for (int k = 0; k < 3; ++k)
        live.emplace_back(a->allocate(n + 13 * k), n + 13 * k);
    for (const auto &[p, n] : live)
      a->deallocate(p, n);
    if (a->can_free_held())
      a->free_held();
    CUPLUG_CALL(cuCtxSynchronize, nullptr);
  }
  CUPLUG_CALL(cuCtxSynchronize, nullptr);
  CUPLUG_CALL(cuMemGetInfo, &free_after, &total);
  BOOST_TEST(free_before <= free_after + largest,
             "the driver has " << (free_before - free_after) << " bytes less free than before");
}

} // namespace contract
} // namespace cuplug::test

// One suite of the contract for one backend. `case_fn` is a function returning an
// allocator_case; the decorators (a label, a precondition) apply to every test in the suite.
#define CUPLUG_ALLOCATOR_CONTRACT(suite, case_fn, decorators)                                      \
  BOOST_AUTO_TEST_SUITE(suite, decorators)                                                         \
  BOOST_AUTO_TEST_CASE(kind_and_zero_bytes) {                                                      \
    cuplug::test::contract::kind_and_zero_bytes(case_fn());                                        \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(blocks_are_distinct_and_usable) {                                           \
    cuplug::test::contract::blocks_are_distinct_and_usable(case_fn());                             \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(peak_restarts_from_in_use) {                                                \
    cuplug::test::contract::peak_restarts_from_in_use(case_fn());                                  \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(stream_ordered_use) {                                                       \
    cuplug::test::contract::stream_ordered_use(case_fn());                                         \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(held_memory_can_be_freed) {                                                 \
    cuplug::test::contract::held_memory_can_be_freed(case_fn());                                   \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(pools_keep_their_counters) {                                                \
    cuplug::test::contract::pools_keep_their_counters(case_fn());                                  \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(out_of_memory_leaves_it_usable) {                                           \
    cuplug::test::contract::out_of_memory_leaves_it_usable(case_fn());                             \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(blocks_beyond_4_gib) {                                                      \
    cuplug::test::contract::blocks_beyond_4_gib(case_fn());                                        \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(threads_never_share_blocks) {                                               \
    cuplug::test::contract::threads_never_share_blocks(case_fn());                                 \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(driver_memory_returns_to_baseline) {                                        \
    cuplug::test::contract::driver_memory_returns_to_baseline(case_fn());                          \
  }                                                                                                \
  BOOST_AUTO_TEST_SUITE_END()
