// The pool algorithm, free of driver calls: upstream blocks cached in size bins, handed out again
// in stream order, released largest first when the upstream runs out of memory.
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/plugin_abi.hpp>
#include <cuplug/pool/size_bins.hpp>
#include <cuplug/pool/stream_fences.hpp>
#include <cuplug/registry.hpp>

#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cuplug::pool {

// Caches blocks of an upstream allocator in the size classes of size_bins.hpp. Each block comes
// from its own upstream allocation, so free_held() gives everything back and the upstream's
// counts balance.
//
// Stream order: a freed block is kept with the (domain, stream) it was freed on. An allocation
// on stream S takes a block freed on S at once (S runs in order); failing that, a block freed on
// another stream T of the same domain, after making S wait for a fence on T (no host
// synchronisation): blocks freed on user streams carry a fence recorded when they were freed,
// blocks freed on the legacy default stream get one recorded when they are taken.
//
// Out of memory: the out-of-memory hook runs (Python's gc.collect(), which may free blocks into
// the pool) and the bin is tried again; then held blocks go back to the upstream, largest first,
// until as many bytes as requested were released, and the upstream is asked again; when nothing
// is held any more it throws out_of_memory with the requested size, bytes in use and held, and
// the upstream's last message.
//
// Thread-safe: one mutex guards the bins and counters; upstream and fence calls run outside it.
class CUPLUG_API block_pool {
public:
  // std::invalid_argument when either is null.
  block_pool(plugin_ptr<allocator> upstream, std::shared_ptr<stream_fences> fences);
  // Gives every held block back to the upstream.
  ~block_pool();
  block_pool(const block_pool &) = delete;
  block_pool &operator=(const block_pool &) = delete;

  // A block of at least `bytes` (> 0), usable by work on `stream`.
  device_ptr allocate(std::size_t bytes, CUstream stream);
  // Takes back a block from allocate() with the same `bytes`, after the work on `stream`.
  void deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) noexcept;

  // Gives every held block back to the upstream; returns the bytes released.
  std::size_t free_held() { return release_largest(std::numeric_limits<std::size_t>::max()); }
  // Gives held blocks back, largest first, until at most `keep_bytes` are held.
  std::size_t trim(std::size_t keep_bytes) {
    const std::size_t held = counters().held_bytes;
    return held > keep_bytes ? release_largest(held - keep_bytes) : 0;
  }
  // From now on freed blocks go straight back to the upstream; frees what is held.
  void stop_holding() {
    holding_.store(false);
    free_held();
  }

  pool_stats counters() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counters_;
  }
  const plugin_ptr<allocator> &upstream() const noexcept { return upstream_; }
  stream_fences &fences() const noexcept { return *fences_; }

  // Nested like PyCUDA's: set_trace(true) twice needs set_trace(false) twice. Trace lines go to
  // stdout, prefixed "[pool] ".
  void set_trace(bool on) noexcept { trace_ += on ? 1 : -1; }
  // Runs on the first out-of-memory of an allocation, with no lock held; it may free blocks into
  // this pool. Set it before the pool is shared between threads.
  void set_out_of_memory_hook(allocator::out_of_memory_hook hook) { reclaim_ = std::move(hook); }

private:
  struct held_block {
    device_ptr ptr;
    CUstream stream;
    std::uintptr_t domain;
    fence_t fence; // 0: freed on a persistent stream (or no fences needed)
  };

  device_ptr take_held(std::uint32_t bin, std::size_t bytes, CUstream stream,
                       std::uintptr_t domain);
  device_ptr try_upstream(std::size_t block, std::size_t bytes, CUstream stream,
                          std::string &error);
  std::size_t release_largest(std::size_t want);
  void release_held(const held_block &b, std::size_t block) noexcept;
  void release_active(device_ptr ptr, std::size_t bytes, std::size_t block,
                      CUstream stream) noexcept;
  void trace(const char *format, ...) const noexcept __attribute__((format(printf, 2, 3)));

  plugin_ptr<allocator> upstream_;
  std::shared_ptr<stream_fences> fences_;
  allocator::out_of_memory_hook reclaim_;
  std::atomic<bool> holding_{true};
  std::atomic<int> trace_{0};

  mutable std::mutex mutex_;
  pool_stats counters_;
  std::vector<held_block> bins_[bin_count];
};

} // namespace cuplug::pool
