// The "pool" allocator: a caching pool with size bins over an upstream allocator.
#pragma once

#include "block_pool.hpp"
#include "cuda_event_fences.hpp"

#include <cuplug/allocator.hpp>
#include <cuplug/options.hpp>

#include <memory>

namespace cuplug {

// block_pool behind the allocator interface (PyCUDA's DeviceMemoryPool, stream-aware). Options
// of the plugin: `upstream` (backend name, default "device"), `trace` (bool: print "[pool]"
// lines). The other constructor is for code that brings its own upstream (the Python pools).
class pool_allocator final : public allocator {
public:
  explicit pool_allocator(const options &opts);
  // Fences follow the upstream's memory kind: CUDA events unless it is plain host memory.
  explicit pool_allocator(plugin_ptr<allocator> upstream)
      : pool_(upstream, fences_for(kind_of(upstream))), kind_(upstream->kind()) {}

  pool::block_pool &blocks() noexcept { return pool_; }
  const pool::block_pool &blocks() const noexcept { return pool_; }

  static std::shared_ptr<pool::stream_fences> fences_for(memory_kind kind) {
    if (kind == memory_kind::host)
      return std::make_shared<pool::unordered_fences>();
    return std::make_shared<pool::cuda_event_fences>();
  }

private:
  static memory_kind kind_of(const plugin_ptr<allocator> &upstream) {
    if (!upstream)
      throw std::invalid_argument("pool_allocator: no upstream allocator given");
    return upstream->kind();
  }

protected:
  std::size_t do_bytes_held() const override { return pool_.counters().held_bytes; }

private:
  std::uintptr_t do_allocate(std::size_t bytes, CUstream stream) override {
    return pool_.allocate(bytes, stream);
  }
  void do_deallocate(std::uintptr_t ptr, std::size_t bytes, CUstream stream) override {
    pool_.deallocate(ptr, bytes, stream);
  }
  memory_kind do_kind() const override { return kind_; }
  bool do_can_free_held() const override { return true; }
  std::size_t do_free_held() override { return pool_.free_held(); }
  std::size_t do_trim(std::size_t keep_bytes) override { return pool_.trim(keep_bytes); }

  pool::block_pool pool_;
  memory_kind kind_;
};

} // namespace cuplug
