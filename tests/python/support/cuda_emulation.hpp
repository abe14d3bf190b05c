// A CPU stand-in for the CUDA thread model, for running generated scan kernels without a GPU:
// one std::thread per CUDA thread, blocks of them running concurrently, __shared__ memory per
// block, __syncthreads / warp shuffles / ballots as barriers, atomics and acquire/release as
// std::atomic_ref. Enough for the scan kernels' code (test_scan_emulated.py), no more.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __forceinline__
#define __launch_bounds__(x)

struct emu_dim3 {
  unsigned x = 0, y = 0, z = 0;
};

// A barrier of mutex and condition variable (libstdc++ 12's std::barrier hung here now and then).
struct emu_barrier {
  explicit emu_barrier(unsigned n) : n(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(m);
    const unsigned gen = generation;
    if (++count == n) {
      count = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return gen != generation; });
    }
  }
  std::mutex m;
  std::condition_variable cv;
  const unsigned n;
  unsigned count = 0, generation = 0;
};

struct emu_warp {
  emu_barrier bar{32};
  unsigned slots[32] = {};
};

struct emu_block {
  explicit emu_block(unsigned threads) : bar(threads), warps(threads / 32) {
    for (auto &w : warps)
      w = std::make_unique<emu_warp>();
  }
  emu_barrier bar;
  std::vector<std::unique_ptr<emu_warp>> warps;
  alignas(16) unsigned char shared[48 * 1024] = {};
};

inline thread_local emu_dim3 threadIdx, blockIdx;
inline emu_dim3 blockDim, gridDim;
inline thread_local emu_block *emu_current = nullptr;
inline thread_local std::minstd_rand emu_rng{12345};
inline int emu_jitter_us = 0; // random delays before each release store (0: none)
// Release stores to [emu_slow_lo, emu_slow_hi) wait emu_slow_us first (a slow publisher).
inline std::uintptr_t emu_slow_lo = 0, emu_slow_hi = 0;
inline int emu_slow_us = 0;
inline std::atomic<long> emu_releases{0};

// __shared__ declarations are rewritten to this: the id-th declaration's bytes in this block.
inline unsigned char *emu_shared_mem(int id, std::size_t size) {
  static std::mutex m;
  static std::map<int, std::size_t> offsets;
  static std::size_t used = 0;
  std::size_t off;
  {
    std::lock_guard<std::mutex> lock(m);
    auto it = offsets.find(id);
    if (it == offsets.end()) {
      it = offsets.emplace(id, used).first;
      used += (size + 15) / 16 * 16;
      if (used > sizeof(emu_block::shared))
        std::abort();
    }
    off = it->second;
  }
  return emu_current->shared + off;
}

inline void __syncthreads() { emu_current->bar.arrive_and_wait(); }
inline emu_warp &emu_my_warp() { return *emu_current->warps[threadIdx.x / 32]; }
inline void __syncwarp(unsigned = 0xffffffffu) { emu_my_warp().bar.arrive_and_wait(); }

inline unsigned emu_exchange(unsigned v, int src) {
  emu_warp &w = emu_my_warp();
  w.slots[threadIdx.x % 32] = v;
  w.bar.arrive_and_wait();
  const unsigned r = w.slots[src];
  w.bar.arrive_and_wait();
  return r;
}
inline unsigned __shfl_sync(unsigned, unsigned v, int src) { return emu_exchange(v, src & 31); }
inline unsigned __shfl_up_sync(unsigned, unsigned v, unsigned d) {
  const int lane = threadIdx.x % 32;
  const unsigned r = emu_exchange(v, lane >= (int)d ? lane - (int)d : lane);
  return r;
}
inline unsigned __ballot_sync(unsigned, int pred) {
  emu_warp &w = emu_my_warp();
  w.slots[threadIdx.x % 32] = pred ? 1u : 0u;
  w.bar.arrive_and_wait();
  unsigned r = 0;
  for (int k = 0; k < 32; ++k)
    r |= w.slots[k] << k;
  w.bar.arrive_and_wait();
  return r;
}
inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
inline unsigned atomicAdd(unsigned *p, unsigned v) {
  return std::atomic_ref<unsigned>(*p).fetch_add(v);
}

// The kernels' memory-model primitives (their inline PTX is replaced by these).
inline unsigned long long cuplug_ld_acquire(const unsigned long long *p) {
  std::this_thread::yield();
  return std::atomic_ref<unsigned long long>(*const_cast<unsigned long long *>(p))
      .load(std::memory_order_acquire);
}
inline void cuplug_st_release(unsigned long long *p, unsigned long long v) {
  if (emu_jitter_us)
    std::this_thread::sleep_for(std::chrono::microseconds(emu_rng() % emu_jitter_us));
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  if (at >= emu_slow_lo && at < emu_slow_hi)
    std::this_thread::sleep_for(std::chrono::microseconds(emu_slow_us));
  emu_releases.fetch_add(1);
  std::atomic_ref<unsigned long long>(*p).store(v, std::memory_order_release);
}
inline unsigned cuplug_ld_cg(const unsigned *p) {
  return std::atomic_ref<unsigned>(*const_cast<unsigned *>(p)).load(std::memory_order_relaxed);
}
inline void cuplug_st_cg(unsigned *p, unsigned v) {
  std::atomic_ref<unsigned>(*p).store(v, std::memory_order_relaxed);
}

// Runs kernel(args...) on grid x block threads, at most `resident` blocks at a time (blocks
// start in order, as on a GPU whose blocks take tile IDs from a counter).
template <typename... Params, typename... Args>
void emu_launch(void (*kernel)(Params...), unsigned grid, unsigned block, unsigned resident,
                Args... args) {
  gridDim.x = grid;
  blockDim.x = block;
  std::mutex m;
  std::condition_variable cv;
  unsigned running = 0;
  std::vector<std::thread> blocks;
  for (unsigned b = 0; b < grid; ++b) {
    {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] { return running < resident; });
      ++running;
    }
    blocks.emplace_back([&, b] {
      emu_block ctx(block);
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < block; ++t)
        threads.emplace_back([&, t] {
          threadIdx.x = t;
          blockIdx.x = b;
          emu_current = &ctx;
          emu_rng.seed(b * 1000 + t +
                       (unsigned)std::chrono::steady_clock::now().time_since_epoch().count());
          kernel(args...);
        });
      for (auto &t : threads)
        t.join();
      std::lock_guard<std::mutex> lock(m);
      --running;
      cv.notify_all();
    });
  }
  for (auto &t : blocks)
    t.join();
}
