// The pool algorithm over host upstreams: reuse, stream order, OOM recovery, threads, churn.
#include "test_upstreams.hpp"

#include <cuplug/pool/block_pool.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <thread>

namespace pool = cuplug::pool;
using cuplug::device_ptr;
using cuplug::test::fake_stream;
using cuplug::test::faulty_upstream;
using cuplug::test::recording_fences;
using cuplug::test::reserving_host;

namespace {

struct host_pool {
  std::shared_ptr<reserving_host> upstream = std::make_shared<reserving_host>();
  pool::block_pool pool{upstream, std::make_shared<pool::unordered_fences>()};
};

struct fenced_pool {
  std::shared_ptr<reserving_host> upstream = std::make_shared<reserving_host>();
  std::shared_ptr<recording_fences> fences = std::make_shared<recording_fences>();
  pool::block_pool pool{upstream, fences};
};

std::string describe(const std::vector<recording_fences::event> &log) {
  std::string s;
  for (const auto &e : log)
    s += e.what + "(" + std::to_string(reinterpret_cast<std::uintptr_t>(e.stream)) + "," +
         std::to_string(e.fence) + ") ";
  return s;
}

void tag(device_ptr p, std::uint64_t value) { std::memcpy(reinterpret_cast<void *>(p), &value, 8); }
std::uint64_t tag_of(device_ptr p) {
  std::uint64_t v;
  std::memcpy(&v, reinterpret_cast<void *>(p), 8);
  return v;
}

} // namespace

BOOST_AUTO_TEST_SUITE(block_pool)

BOOST_AUTO_TEST_CASE(freed_blocks_are_reused_and_counted) {
  host_pool h;
  const device_ptr a = h.pool.allocate(1000, nullptr);
  cuplug::pool_stats c = h.pool.counters();
  BOOST_TEST(c.active_blocks == 1u);
  BOOST_TEST(c.active_bytes == 1000u);
  BOOST_TEST(c.managed_bytes == pool::alloc_size(pool::bin_number(1000)));
  h.pool.deallocate(a, 1000, nullptr);
  c = h.pool.counters();
  BOOST_TEST(c.active_blocks == 0u);
  BOOST_TEST(c.held_blocks == 1u);
  BOOST_TEST(c.held_bytes == pool::alloc_size(pool::bin_number(1000)));
  // Any size of the same class gets the same block back, without asking the upstream.
  const std::size_t calls = h.upstream->stats().allocations;
  const device_ptr b = h.pool.allocate(pool::alloc_size(pool::bin_number(1000)), nullptr);
  BOOST_TEST(b == a);
  BOOST_TEST(h.upstream->stats().allocations == calls);
  h.pool.deallocate(b, pool::alloc_size(pool::bin_number(1000)), nullptr);
  // A different class does not.
  const device_ptr d = h.pool.allocate(5000, nullptr);
  BOOST_TEST(d != a);
  h.pool.deallocate(d, 5000, nullptr);
  BOOST_TEST(h.pool.free_held() ==
             pool::alloc_size(pool::bin_number(1000)) + pool::alloc_size(pool::bin_number(5000)));
  c = h.pool.counters();
  BOOST_TEST(c.held_blocks == 0u);
  BOOST_TEST(c.held_bytes == 0u);
  BOOST_TEST(c.managed_bytes == 0u);
  BOOST_TEST(h.upstream->stats().bytes_in_use == 0u);
  BOOST_TEST(h.upstream->stats().allocations == h.upstream->stats().deallocations);
}

BOOST_AUTO_TEST_CASE(trim_releases_largest_first_down_to_the_bound) {
  host_pool h;
  std::vector<std::size_t> sizes = {1 << 10, 1 << 12, 1 << 14, 1 << 16};
  std::vector<device_ptr> ps;
  for (auto n : sizes)
    ps.push_back(h.pool.allocate(n, nullptr));
  for (std::size_t i = 0; i < sizes.size(); ++i)
    h.pool.deallocate(ps[i], sizes[i], nullptr);
  const std::size_t released = h.pool.trim((1 << 10) + (1 << 12) + (1 << 14));
  BOOST_TEST(released == (1u << 16));
  BOOST_TEST(h.pool.counters().held_blocks == 3u);
  BOOST_TEST(h.pool.trim(0) == (1u << 10) + (1u << 12) + (1u << 14));
  BOOST_TEST(h.pool.counters().held_bytes == 0u);
}

BOOST_AUTO_TEST_CASE(stop_holding_frees_and_stops_caching) {
  host_pool h;
  const device_ptr a = h.pool.allocate(100, nullptr);
  const device_ptr b = h.pool.allocate(100, nullptr);
  h.pool.deallocate(a, 100, nullptr);
  h.pool.stop_holding();
  BOOST_TEST(h.pool.counters().held_blocks == 0u);
  h.pool.deallocate(b, 100, nullptr);
  BOOST_TEST(h.pool.counters().held_blocks == 0u);
  BOOST_TEST(h.pool.counters().managed_bytes == 0u);
  BOOST_TEST(h.upstream->stats().bytes_in_use == 0u);
}

BOOST_AUTO_TEST_CASE(same_stream_reuse_needs_no_fence) {
  fenced_pool f;
  const CUstream s = fake_stream(7);
  const device_ptr a = f.pool.allocate(4096, s);
  f.pool.deallocate(a, 4096, s); // user stream: fenced at the free
  auto log = f.fences->take_log();
  BOOST_TEST_REQUIRE(log.size() == 1u, describe(log));
  BOOST_TEST(log[0].what == "record");
  BOOST_TEST(log[0].stream == s);
  const device_ptr b = f.pool.allocate(4096, s);
  BOOST_TEST(b == a);
  log = f.fences->take_log();
  BOOST_TEST_REQUIRE(log.size() == 1u, describe(log)); // the unneeded fence is only released
  BOOST_TEST(log[0].what == "release");
  f.pool.deallocate(b, 4096, s);
  f.pool.free_held();
  BOOST_TEST(f.fences->outstanding() == 0);
}

BOOST_AUTO_TEST_CASE(another_stream_waits_for_the_fence_of_the_free) {
  fenced_pool f;
  const CUstream s = fake_stream(7), t = fake_stream(8);
  const device_ptr a = f.pool.allocate(4096, s);
  f.pool.deallocate(a, 4096, s);
  const pool::fence_t fence = f.fences->take_log().at(0).fence;
  const device_ptr b = f.pool.allocate(4096, t);
  BOOST_TEST(b == a);
  const auto log = f.fences->take_log();
  BOOST_TEST_REQUIRE(log.size() == 2u, describe(log));
  BOOST_TEST(log[0].what == "wait");
  BOOST_TEST(log[0].stream == t);
  BOOST_TEST(log[0].fence == fence);
  BOOST_TEST(log[1].what == "release");
  f.pool.deallocate(b, 4096, t);
  f.pool.free_held();
  BOOST_TEST(f.fences->outstanding() == 0);
}

BOOST_AUTO_TEST_CASE(the_default_stream_is_fenced_when_another_stream_takes_the_block) {
  fenced_pool f;
  const CUstream t = fake_stream(8);
  const device_ptr a = f.pool.allocate(4096, nullptr);
  f.pool.deallocate(a, 4096, nullptr);
  BOOST_TEST(f.fences->take_log().empty()); // no driver call on the fast path
  const device_ptr b = f.pool.allocate(4096, nullptr);
  BOOST_TEST(b == a);
  BOOST_TEST(f.fences->take_log().empty());
  f.pool.deallocate(b, 4096, nullptr);
  const device_ptr c = f.pool.allocate(4096, t);
  BOOST_TEST(c == a);
  const auto log = f.fences->take_log();
  BOOST_TEST_REQUIRE(log.size() == 3u, describe(log));
  BOOST_TEST(log[0].what == "record");
  BOOST_TEST(log[0].stream == nullptr);
  BOOST_TEST(log[1].what == "wait");
  BOOST_TEST(log[1].stream == t);
  BOOST_TEST(log[1].fence == log[0].fence);
  BOOST_TEST(log[2].what == "release");
  f.pool.deallocate(c, 4096, t);
  f.pool.free_held();
  BOOST_TEST(f.fences->outstanding() == 0);
}

BOOST_AUTO_TEST_CASE(a_block_from_the_same_stream_is_preferred) {
  fenced_pool f;
  const CUstream s = fake_stream(7), t = fake_stream(8);
  const device_ptr a = f.pool.allocate(4096, s);
  const device_ptr b = f.pool.allocate(4096, t);
  f.pool.deallocate(a, 4096, s);
  f.pool.deallocate(b, 4096, t); // the most recent free is t's, but s should get its own back
  f.fences->take_log();
  BOOST_TEST(f.pool.allocate(4096, s) == a);
  BOOST_TEST(f.pool.allocate(4096, t) == b);
  for (const auto &e : f.fences->take_log())
    BOOST_TEST(e.what == "release");
  f.pool.deallocate(a, 4096, s);
  f.pool.deallocate(b, 4096, t);
  f.pool.free_held();
  BOOST_TEST(f.fences->outstanding() == 0);
}

BOOST_AUTO_TEST_CASE(blocks_never_cross_domains) {
  fenced_pool f;
  f.fences->current_domain = 1;
  const device_ptr a = f.pool.allocate(4096, nullptr);
  f.pool.deallocate(a, 4096, nullptr);
  f.fences->current_domain = 2;
  const device_ptr b = f.pool.allocate(4096, nullptr);
  BOOST_TEST(b != a);
  f.pool.deallocate(b, 4096, nullptr);
  BOOST_TEST(f.pool.counters().held_blocks == 2u);
  BOOST_TEST(f.pool.free_held() == 2u * 4096);
  BOOST_TEST(f.upstream->stats().bytes_in_use == 0u);
}

BOOST_AUTO_TEST_CASE(fenced_blocks_are_synchronised_before_going_back_upstream) {
  fenced_pool f;
  const CUstream s = fake_stream(7);
  const device_ptr a = f.pool.allocate(4096, s);
  f.pool.deallocate(a, 4096, s);
  const pool::fence_t fence = f.fences->take_log().at(0).fence;
  f.pool.free_held();
  const auto log = f.fences->take_log();
  BOOST_TEST_REQUIRE(log.size() == 2u, describe(log));
  BOOST_TEST(log[0].what == "synchronize");
  BOOST_TEST(log[0].fence == fence);
  BOOST_TEST(log[1].what == "release");
}

BOOST_AUTO_TEST_CASE(out_of_memory_releases_held_blocks_largest_first) {
  auto faulty = std::make_shared<faulty_upstream>(std::make_shared<reserving_host>());
  pool::block_pool p(faulty, std::make_shared<pool::unordered_fences>());
  const std::size_t small = 1 << 12, mid = 1 << 16, large = 1 << 20;
  const device_ptr a = p.allocate(small, nullptr);
  const device_ptr b = p.allocate(mid, nullptr);
  const device_ptr c = p.allocate(large, nullptr);
  p.deallocate(a, small, nullptr);
  p.deallocate(b, mid, nullptr);
  p.deallocate(c, large, nullptr);
  // The upstream now has room for nothing more: a new class must come from released blocks.
  faulty->budget = small + mid + large;
  const device_ptr d = p.allocate(large / 2, nullptr);
  BOOST_TEST(d != 0u);
  const cuplug::pool_stats k = p.counters();
  BOOST_TEST(k.held_blocks == 2u); // only the largest block had to go
  BOOST_TEST(k.held_bytes == small + mid);
  p.deallocate(d, large / 2, nullptr);
  p.free_held();
  BOOST_TEST(faulty->stats().bytes_in_use == 0u);
}

BOOST_AUTO_TEST_CASE(out_of_memory_with_nothing_held_says_what_it_knew) {
  auto faulty = std::make_shared<faulty_upstream>(std::make_shared<reserving_host>());
  pool::block_pool p(faulty, std::make_shared<pool::unordered_fences>());
  const device_ptr keep = p.allocate(3000, nullptr);
  const device_ptr held = p.allocate(1 << 20, nullptr);
  p.deallocate(held, 1 << 20, nullptr);
  faulty->fail_all = true;
  try {
    p.allocate(12345, nullptr);
    BOOST_ERROR("allocation succeeded with a failing upstream");
  } catch (const cuplug::out_of_memory &e) {
    const std::string msg = e.what();
    BOOST_TEST(e.code() == CUDA_ERROR_OUT_OF_MEMORY);
    BOOST_TEST(e.requested() == 12345u);
    BOOST_TEST(msg.find("memory_pool::allocate failed: out of memory") == 0u, msg);
    BOOST_TEST(msg.find("requested 12345 bytes; in use 3000, held 0") != std::string::npos, msg);
    BOOST_TEST(msg.find("failed to free memory for allocation") != std::string::npos, msg);
    BOOST_TEST(msg.find("faulty::allocate") != std::string::npos, msg); // the upstream's word
  }
  BOOST_TEST(p.counters().held_blocks == 0u); // the held block was given up trying
  faulty->fail_all = false;
  const device_ptr again = p.allocate(12345, nullptr);
  BOOST_TEST(again != 0u);
  p.deallocate(again, 12345, nullptr);
  p.deallocate(keep, 3000, nullptr);
  p.free_held();
  BOOST_TEST(faulty->stats().bytes_in_use == 0u);
}

BOOST_AUTO_TEST_CASE(the_reclaim_hook_runs_before_held_blocks_are_released) {
  auto faulty = std::make_shared<faulty_upstream>(std::make_shared<reserving_host>());
  pool::block_pool p(faulty, std::make_shared<pool::unordered_fences>());
  const device_ptr garbage = p.allocate(8192, nullptr); // "still referenced by Python"
  const device_ptr other = p.allocate(1 << 16, nullptr);
  p.deallocate(other, 1 << 16, nullptr);
  int runs = 0;
  p.set_out_of_memory_hook([&] {
    ++runs;
    p.deallocate(garbage, 8192, nullptr); // gc.collect() dropped the last reference
  });
  faulty->fail_all = true;
  const device_ptr got = p.allocate(8000, nullptr); // same class as `garbage`
  BOOST_TEST(runs == 1);
  BOOST_TEST(got == garbage);
  BOOST_TEST(p.counters().held_blocks == 1u); // the unrelated held block survived
  faulty->fail_all = false;
  p.deallocate(got, 8000, nullptr);
  p.free_held();
}

BOOST_AUTO_TEST_CASE(other_upstream_errors_are_not_taken_for_out_of_memory) {
  auto faulty = std::make_shared<faulty_upstream>(std::make_shared<reserving_host>());
  pool::block_pool p(faulty, std::make_shared<pool::unordered_fences>());
  const device_ptr held = p.allocate(1 << 16, nullptr);
  p.deallocate(held, 1 << 16, nullptr);
  faulty->fail_code = CUDA_ERROR_INVALID_VALUE;
  try {
    p.allocate(100, nullptr);
    BOOST_ERROR("no error");
  } catch (const cuplug::cuda_error &e) {
    BOOST_TEST(e.code() == CUDA_ERROR_INVALID_VALUE);
  }
  BOOST_TEST(p.counters().held_blocks == 1u); // nothing was released for it
  faulty->fail_code = 0;
}

BOOST_AUTO_TEST_CASE(sixteen_threads_hammering_one_pool) {
  auto upstream = std::make_shared<reserving_host>();
  pool::block_pool p(upstream, std::make_shared<pool::unordered_fences>());
  constexpr int threads = 16, rounds = 20000;
  std::atomic<long> clashes{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<device_ptr, std::size_t>> mine;
      for (int r = 0; r < rounds; ++r) {
        if (mine.size() < 8 && (mine.empty() || rng() % 2)) {
          const std::size_t n = std::size_t{16} << (rng() % 12); // 12 classes, heavy sharing
          const device_ptr q = p.allocate(n, nullptr);
          tag(q, (std::uint64_t(t) << 32) | r);
          mine.emplace_back(q, n);
        } else {
          const std::size_t i = rng() % mine.size();
          const auto [q, n] = mine[i];
          if ((tag_of(q) >> 32) != std::uint64_t(t))
            ++clashes; // another thread was handed our live block
          p.deallocate(q, n, nullptr);
          mine[i] = mine.back();
          mine.pop_back();
        }
      }
      for (const auto &[q, n] : mine)
        p.deallocate(q, n, nullptr);
    });
  }
  for (auto &w : workers)
    w.join();
  BOOST_TEST(clashes.load() == 0);
  const cuplug::pool_stats c = p.counters();
  BOOST_TEST(c.active_blocks == 0u);
  BOOST_TEST(c.active_bytes == 0u);
  BOOST_TEST(c.managed_bytes == c.held_bytes);
  p.free_held();
  BOOST_TEST(p.counters().held_bytes == 0u);
  BOOST_TEST(upstream->stats().bytes_in_use == 0u);
  BOOST_TEST(upstream->stats().allocations == upstream->stats().deallocations);
}

// A million random operations with sizes from 0 to beyond 4 GiB, checked against a model.
BOOST_AUTO_TEST_CASE(a_million_operations_of_churn) {
  auto upstream = std::make_shared<reserving_host>();
  auto fences = std::make_shared<recording_fences>();
  fences->keep_log = false;
  pool::block_pool p(upstream, fences);
  std::mt19937_64 rng(7);
  std::vector<std::pair<device_ptr, std::size_t>> live;
  std::size_t live_bytes = 0, big = 0;
  const CUstream streams[] = {nullptr, fake_stream(1), fake_stream(2)};
  for (int op = 0; op < 1000000; ++op) {
    if (live.size() < 64 && (live.empty() || rng() % 2)) {
      std::size_t n;
      const unsigned pick = rng() % 100;
      if (pick == 0)
        n = (std::size_t{4} << 30) + rng() % (std::size_t{4} << 30); // 4..8 GiB
      else if (pick < 3)
        n = 0;
      else
        n = 1 + (rng() >> (rng() % 64)) % (std::size_t{1} << (1 + rng() % 24));
      if (n == 0) { // the allocator door answers 0 for 0 bytes; the pool serves a 1-byte block
        const device_ptr q = p.allocate(0, nullptr);
        BOOST_TEST_REQUIRE(q != 0u);
        p.deallocate(q, 0, nullptr);
        continue;
      }
      big += n > (std::size_t{1} << 32);
      const device_ptr q = p.allocate(n, streams[rng() % 3]);
      tag(q, static_cast<std::uint64_t>(op));
      live.emplace_back(q, n);
      live_bytes += n;
    } else {
      const std::size_t i = rng() % live.size();
      const auto [q, n] = live[i];
      (void)n;
      live[i] = live.back();
      live.pop_back();
      live_bytes -= n;
      p.deallocate(q, n, streams[rng() % 3]);
    }
    if (op % 100000 == 0)
      BOOST_TEST_REQUIRE(p.counters().active_bytes == live_bytes);
  }
  BOOST_TEST(big > 1000u);
  for (const auto &[q, n] : live)
    p.deallocate(q, n, nullptr);
  BOOST_TEST(p.counters().active_blocks == 0u);
  p.free_held();
  const cuplug::pool_stats c = p.counters();
  BOOST_TEST(c.held_bytes == 0u);
  BOOST_TEST(c.managed_bytes == 0u);
  BOOST_TEST(upstream->stats().bytes_in_use == 0u);
  BOOST_TEST(upstream->stats().allocations == upstream->stats().deallocations);
  BOOST_TEST(fences->outstanding() == 0);
}

BOOST_AUTO_TEST_CASE(trace_lines_say_what_happened) {
  host_pool h;
  h.pool.set_trace(true);
  // Only checks that tracing does not disturb the pool; the lines go to stdout.
  const device_ptr a = h.pool.allocate(100, nullptr);
  h.pool.deallocate(a, 100, nullptr);
  BOOST_TEST(h.pool.allocate(100, nullptr) == a);
  h.pool.deallocate(a, 100, nullptr);
  h.pool.set_trace(false);
  BOOST_TEST(h.pool.free_held() > 0u);
}

BOOST_AUTO_TEST_SUITE_END()
