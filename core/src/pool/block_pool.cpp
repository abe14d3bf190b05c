// The pool algorithm of the pool kit (core/include/cuplug/pool/block_pool.hpp).
#include <cuplug/pool/block_pool.hpp>

#include <cuplug/errors.hpp>

#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace cuplug::pool {

block_pool::block_pool(plugin_ptr<allocator> upstream, std::shared_ptr<stream_fences> fences)
    : upstream_(std::move(upstream)), fences_(std::move(fences)) {
  if (!upstream_)
    throw std::invalid_argument("memory pool: no upstream allocator given");
  if (!fences_)
    throw std::invalid_argument("memory pool: no stream fences given");
}

block_pool::~block_pool() { free_held(); }

device_ptr block_pool::allocate(std::size_t bytes, CUstream stream) {
  if (bytes > max_block_size) {
    const pool_stats c = counters();
    throw out_of_memory("memory_pool::allocate", bytes, c.active_bytes, c.held_bytes, 0,
                        "larger than the largest size class (" + std::to_string(max_block_size) +
                            " bytes)");
  }
  const std::uint32_t bin = bin_number(bytes);
  const std::size_t block = alloc_size(bin);
  const std::uintptr_t domain = fences_->domain();
  if (device_ptr p = take_held(bin, bytes, stream, domain))
    return p;

  trace("allocation of size %zu required new memory", bytes);
  std::string upstream_error;
  if (device_ptr p = try_upstream(block, bytes, stream, upstream_error))
    return p;
  if (reclaim_) {
    trace("allocation triggered OOM, running GC");
    reclaim_();
    if (device_ptr p = take_held(bin, bytes, stream, domain))
      return p;
    trace("allocation still OOM after GC");
  }
  while (release_largest(block) != 0) {
    if (device_ptr p = take_held(bin, bytes, stream, domain))
      return p;
    if (device_ptr p = try_upstream(block, bytes, stream, upstream_error))
      return p;
  }
  const pool_stats c = counters();
  throw out_of_memory("memory_pool::allocate", bytes, c.active_bytes, c.held_bytes, 0,
                      "failed to free memory for allocation (upstream: " + upstream_error + ")");
}

device_ptr block_pool::take_held(std::uint32_t bin, std::size_t bytes, CUstream stream,
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

device_ptr block_pool::try_upstream(std::size_t block, std::size_t bytes, CUstream stream,
                                    std::string &error) {
  device_ptr p = 0;
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

void block_pool::deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) noexcept {
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

std::size_t block_pool::release_largest(std::size_t want) {
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

void block_pool::release_held(const held_block &b, std::size_t block) noexcept {
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

void block_pool::release_active(device_ptr ptr, std::size_t bytes, std::size_t block,
                                CUstream stream) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --counters_.active_blocks;
    counters_.active_bytes -= bytes;
    counters_.managed_bytes -= block;
  }
  upstream_->deallocate(ptr, block, stream);
}

void block_pool::trace(const char *format, ...) const noexcept {
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
