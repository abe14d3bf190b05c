// The pool algorithm, free of driver calls: upstream blocks cached in size bins, handed out again
// in stream order, released largest first when the upstream runs out of memory.
#pragma once

#include "size_bins.hpp"
#include "stream_fences.hpp"

#include <cuplug/allocator.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cuplug::pool {

// PyCUDA's pool counters (spec §13.5).
struct pool_counters {
  std::size_t held_blocks = 0;   // freed by the user, cached for reuse
  std::size_t active_blocks = 0; // in use by the user
  std::size_t held_bytes = 0;    // block sizes of the held blocks
  std::size_t managed_bytes = 0; // block sizes of held + active blocks (what the upstream gave)
  std::size_t active_bytes = 0;  // requested sizes of the active blocks
};

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
// Out of memory: the reclaim hook runs (Python's gc.collect(), which may free blocks into the
// pool) and the bin is tried again; then held blocks go back to the upstream, largest first,
// until as many bytes as requested were released, and the upstream is asked again; when nothing
// is held any more it throws out_of_memory with the requested size, bytes in use and held, and
// the upstream's last message.
//
// Thread-safe: one mutex guards the bins and counters; upstream and fence calls run outside it.
class block_pool {
public:
  block_pool(plugin_ptr<allocator> upstream, std::shared_ptr<stream_fences> fences)
      : upstream_(std::move(upstream)), fences_(std::move(fences)) {
    if (!upstream_)
      throw std::invalid_argument("memory pool: no upstream allocator given");
    if (!fences_)
      throw std::invalid_argument("memory pool: no stream fences given");
  }
  ~block_pool() { free_held(); }
  block_pool(const block_pool &) = delete;
  block_pool &operator=(const block_pool &) = delete;

  // A block of at least `bytes` (> 0), usable by work on `stream`.
  std::uintptr_t allocate(std::size_t bytes, CUstream stream);
  // Takes back a block from allocate() with the same `bytes`, after the work on `stream`.
  void deallocate(std::uintptr_t ptr, std::size_t bytes, CUstream stream) noexcept;

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

  pool_counters counters() const {
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
  void set_reclaim_hook(std::function<void()> hook) { reclaim_ = std::move(hook); }

private:
  struct held_block {
    std::uintptr_t ptr;
    CUstream stream;
    std::uintptr_t domain;
    fence_t fence; // 0: freed on a persistent stream (or no fences needed)
  };

  std::uintptr_t take_held(std::uint32_t bin, std::size_t bytes, CUstream stream,
                           std::uintptr_t domain);
  std::uintptr_t try_upstream(std::size_t block, std::size_t bytes, CUstream stream,
                              std::string &error);
  std::size_t release_largest(std::size_t want);
  void release_held(const held_block &b, std::size_t block) noexcept;
  void release_active(std::uintptr_t ptr, std::size_t bytes, std::size_t block,
                      CUstream stream) noexcept;
  void trace(const char *format, ...) const noexcept __attribute__((format(printf, 2, 3)));

  plugin_ptr<allocator> upstream_;
  std::shared_ptr<stream_fences> fences_;
  std::function<void()> reclaim_;
  std::atomic<bool> holding_{true};
  std::atomic<int> trace_{0};

  mutable std::mutex mutex_;
  pool_counters counters_;
  std::vector<held_block> bins_[bin_count];
};

inline std::uintptr_t block_pool::allocate(std::size_t bytes, CUstream stream) {
  if (bytes > max_block_size) {
    const pool_counters c = counters();
    throw out_of_memory("memory_pool::allocate", bytes, c.active_bytes, c.held_bytes, 0,
                        "larger than the largest size class (" + std::to_string(max_block_size) +
                            " bytes)");
  }
  const std::uint32_t bin = bin_number(bytes);
  const std::size_t block = alloc_size(bin);
  const std::uintptr_t domain = fences_->domain();
  if (std::uintptr_t p = take_held(bin, bytes, stream, domain))
    return p;

  trace("allocation of size %zu required new memory", bytes);
  std::string upstream_error;
  if (std::uintptr_t p = try_upstream(block, bytes, stream, upstream_error))
    return p;
  if (reclaim_) {
    trace("allocation triggered OOM, running GC");
    reclaim_();
    if (std::uintptr_t p = take_held(bin, bytes, stream, domain))
      return p;
    trace("allocation still OOM after GC");
  }
  while (release_largest(block) != 0) {
    if (std::uintptr_t p = take_held(bin, bytes, stream, domain))
      return p;
    if (std::uintptr_t p = try_upstream(block, bytes, stream, upstream_error))
      return p;
  }
  const pool_counters c = counters();
  throw out_of_memory("memory_pool::allocate", bytes, c.active_bytes, c.held_bytes, 0,
                      "failed to free memory for allocation (upstream: " + upstream_error + ")");
}

inline std::uintptr_t block_pool::take_held(std::uint32_t bin, std::size_t bytes, CUstream stream,
                                            std::uintptr_t domain) {
  const bool ordered = fences_->needs_fences();
  held_block b{};
  bool same = true;
  std::size_t left = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<held_block> &v = bins_[bin];
    if (v.empty())
      return 0;
    std::size_t pick = v.size();
    if (!ordered) {
      pick = v.size() - 1;
    } else {
      // The most recently freed block of this stream, else of another stream of this domain.
      for (std::size_t i = v.size(); i-- > 0;) {
        if (v[i].domain != domain)
          continue;
        if (fences_->same_stream(v[i].stream, stream)) {
          pick = i;
          break;
        }
        if (pick == v.size())
          pick = i;
      }
      if (pick == v.size())
        return 0;
      same = fences_->same_stream(v[pick].stream, stream);
    }
    b = v[pick];
    v[pick] = v.back();
    v.pop_back();
    left = v.size();
    const std::size_t block = alloc_size(bin);
    --counters_.held_blocks;
    counters_.held_bytes -= block;
    ++counters_.active_blocks;
    counters_.active_bytes += bytes;
  }
  if (ordered) {
    if (same) {
      if (b.fence)
        fences_->release(b.fence);
    } else {
      try {
        if (b.fence) {
          fences_->wait(stream, b.fence);
          fences_->release(b.fence);
        } else {
          const fence_t f = fences_->record(b.stream, domain);
          try {
            fences_->wait(stream, f);
          } catch (...) {
            fences_->release(f);
            throw;
          }
          fences_->release(f);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        bins_[bin].push_back(b);
        ++counters_.held_blocks;
        counters_.held_bytes += alloc_size(bin);
        --counters_.active_blocks;
        counters_.active_bytes -= bytes;
        throw;
      }
    }
  }
  trace("allocation of size %zu served from bin %u which contained %zu entries", bytes, bin,
        left + 1);
  return b.ptr;
}

inline std::uintptr_t block_pool::try_upstream(std::size_t block, std::size_t bytes,
                                               CUstream stream, std::string &error) {
  std::uintptr_t p = 0;
  try {
    p = upstream_->allocate(block, stream);
  } catch (const cuda_error &e) {
    if (e.code() != CUDA_ERROR_OUT_OF_MEMORY)
      throw;
    error = e.what();
    return 0;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.active_blocks;
  counters_.active_bytes += bytes;
  counters_.managed_bytes += block;
  return p;
}

inline void block_pool::deallocate(std::uintptr_t ptr, std::size_t bytes,
                                   CUstream stream) noexcept {
  if (ptr == 0)
    return;
  if (bytes > max_block_size) { // cannot have come from this pool; let the upstream judge
    upstream_->deallocate(ptr, bytes, stream);
    return;
  }
  const std::uint32_t bin = bin_number(bytes);
  const std::size_t block = alloc_size(bin);
  if (!holding_.load(std::memory_order_relaxed)) {
    release_active(ptr, bytes, block, stream);
    return;
  }
  const std::uintptr_t domain = fences_->domain();
  fence_t f = 0;
  if (fences_->needs_fences() && !fences_->persistent(stream)) {
    try {
      f = fences_->record(stream, domain);
    } catch (const std::exception &e) {
      // No fence, no safe reuse on other streams: the upstream takes it back in stream order.
      trace("could not fence a block of size %zu (%s); returned to the upstream", bytes, e.what());
      release_active(ptr, bytes, block, stream);
      return;
    }
  }
  std::size_t now = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (holding_.load(std::memory_order_relaxed)) {
      bins_[bin].push_back(held_block{ptr, stream, domain, f});
      now = bins_[bin].size();
      --counters_.active_blocks;
      counters_.active_bytes -= bytes;
      ++counters_.held_blocks;
      counters_.held_bytes += block;
    }
  }
  if (now == 0) { // stop_holding() ran meanwhile
    if (f)
      fences_->release(f);
    release_active(ptr, bytes, block, stream);
    return;
  }
  trace("block of size %zu returned to bin %u which now contains %zu entries", bytes, bin, now);
}

inline std::size_t block_pool::release_largest(std::size_t want) {
  std::vector<std::pair<held_block, std::size_t>> victims;
  std::size_t released = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::uint32_t bin = bin_count; bin-- > 0 && released < want;) {
      std::vector<held_block> &v = bins_[bin];
      const std::size_t block = alloc_size(bin);
      while (!v.empty() && released < want) {
        victims.emplace_back(v.back(), block);
        v.pop_back();
        released += block;
        --counters_.held_blocks;
        counters_.held_bytes -= block;
        counters_.managed_bytes -= block;
      }
    }
  }
  for (const auto &[b, block] : victims)
    release_held(b, block);
  if (released != 0)
    trace("released %zu held blocks (%zu bytes) to the upstream", victims.size(), released);
  return released;
}

inline void block_pool::release_held(const held_block &b, std::size_t block) noexcept {
  CUstream stream = b.stream;
  if (b.fence) {
    // Its stream may be gone by now: wait here, then free in the order of the default stream.
    try {
      fences_->synchronize(b.fence);
    } catch (...) {
    }
    fences_->release(b.fence);
    stream = nullptr;
  }
  upstream_->deallocate(b.ptr, block, stream);
}

inline void block_pool::release_active(std::uintptr_t ptr, std::size_t bytes, std::size_t block,
                                       CUstream stream) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --counters_.active_blocks;
    counters_.active_bytes -= bytes;
    counters_.managed_bytes -= block;
  }
  upstream_->deallocate(ptr, block, stream);
}

inline void block_pool::trace(const char *format, ...) const noexcept {
  if (trace_.load(std::memory_order_relaxed) <= 0)
    return;
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  std::printf("[pool] %s\n", line);
  std::fflush(stdout);
}

} // namespace cuplug::pool
