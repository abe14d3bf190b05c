// The "pool" allocator: the pool kit's block_pool behind the allocator interface.
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/options.hpp>
#include <cuplug/pool/block_pool.hpp>

#include <optional>

namespace cuplug::plugins {

// PyCUDA's DeviceMemoryPool algorithm (core/include/cuplug/pool/block_pool.hpp), stream-aware,
// over any upstream allocator, with CUDA-event fences unless the upstream is plain host memory.
// Options: `upstream` (backend name, default "device"; when the registry creates it over an
// allocator object, that object), `trace` (bool: print "[pool]" lines). A pool in every sense of
// the allocator interface: pool_statistics, stop_holding, set_trace, the out-of-memory hook.
class pool_allocator final : public allocator {
public:
  explicit pool_allocator(const options &opts);

protected:
  std::size_t do_bytes_held() const override { return pool_.counters().held_bytes; }

private:
  explicit pool_allocator(plugin_ptr<allocator> upstream);

  device_ptr do_allocate(std::size_t bytes, CUstream stream) override {
    return pool_.allocate(bytes, stream);
  }
  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) override {
    pool_.deallocate(ptr, bytes, stream);
  }
  memory_kind do_kind() const override { return kind_; }
  bool do_can_free_held() const override { return true; }
  std::size_t do_free_held() override { return pool_.free_held(); }
  std::size_t do_trim(std::size_t keep_bytes) override { return pool_.trim(keep_bytes); }
  std::optional<pool_stats> do_pool_statistics() const override { return pool_.counters(); }
  void do_stop_holding() override { pool_.stop_holding(); }
  void do_set_trace(bool on) override { pool_.set_trace(on); }
  void do_set_out_of_memory_hook(out_of_memory_hook hook) override {
    pool_.set_out_of_memory_hook(std::move(hook));
  }

  const memory_kind kind_;
  pool::block_pool pool_;
};

} // namespace cuplug::plugins
