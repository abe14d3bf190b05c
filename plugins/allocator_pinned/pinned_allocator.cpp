// The "pinned" allocator: page-locked host memory from cuMemHostAlloc, plain or pooled.
#include <cuplug/allocator.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/options.hpp>
#include <cuplug/plugin.hpp>
#include <cuplug/pool/block_pool.hpp>
#include <cuplug/pool/cuda_event_fences.hpp>
#include <cuplug/pool/page_locked_memory.hpp>

#include <cuda.h>

#include <memory>
#include <optional>
#include <string>

namespace cuplug::plugins {
namespace {

unsigned flags_option(const options &opts) {
  auto flags =
      pool::host_alloc_flags(opts.get_int("flags", 0), "allocator 'pinned': option 'flags'");
  if (opts.get_bool("portable", false))
    flags |= CU_MEMHOSTALLOC_PORTABLE;
  if (opts.get_bool("devicemap", false))
    flags |= CU_MEMHOSTALLOC_DEVICEMAP;
  if (opts.get_bool("writecombined", false))
    flags |= CU_MEMHOSTALLOC_WRITECOMBINED;
  return flags;
}

// Options: `flags` (cuMemHostAlloc flags, default 0) or the booleans `portable`, `devicemap`,
// `writecombined`; `pooled` (bool, default false) caches freed blocks with the pool kit's
// block_pool (PyCUDA's PageLockedMemoryPool), and makes this allocator a pool. Pooled blocks
// follow the pool's stream order for device work on them; host code that writes a block it took
// must first wait for the work that used it before it was freed, as with any pinned buffer.
class pinned_allocator final : public allocator {
public:
  explicit pinned_allocator(const options &opts)
      : memory_(std::make_shared<pool::page_locked_memory>(flags_option(opts))) {
    memory_->set_backend_name("pinned");
    if (opts.get_bool("pooled", false))
      pool_ =
          std::make_unique<pool::block_pool>(memory_, std::make_shared<pool::cuda_event_fences>());
  }

protected:
  std::size_t do_bytes_held() const override { return pool_ ? pool_->counters().held_bytes : 0; }

private:
  device_ptr do_allocate(std::size_t bytes, CUstream stream) override {
    return pool_ ? pool_->allocate(bytes, stream) : memory_->allocate(bytes, stream);
  }
  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) override {
    if (pool_)
      pool_->deallocate(ptr, bytes, stream);
    else
      memory_->deallocate(ptr, bytes, stream);
  }
  memory_kind do_kind() const override { return memory_kind::pinned_host; }
  bool do_can_free_held() const override { return pool_ != nullptr; }
  std::size_t do_free_held() override { return pooled("holds no memory to free").free_held(); }
  std::size_t do_trim(std::size_t keep_bytes) override {
    return pooled("cannot trim").trim(keep_bytes);
  }
  std::optional<pool_stats> do_pool_statistics() const override {
    if (!pool_)
      return std::nullopt;
    return pool_->counters();
  }
  void do_stop_holding() override { pooled("holds nothing to stop").stop_holding(); }
  void do_set_trace(bool on) override { pooled("has no trace").set_trace(on); }
  void do_set_out_of_memory_hook(out_of_memory_hook hook) override {
    pooled("runs no out-of-memory hook").set_out_of_memory_hook(std::move(hook));
  }

  // The pool, or not_supported "allocator 'pinned' <what> (it is not pooled; ...)".
  pool::block_pool &pooled(const char *what) const {
    if (!pool_)
      throw not_supported(std::string("allocator 'pinned' ") + what +
                          ": it is not pooled; set option pooled=true for a pool");
    return *pool_;
  }

  std::shared_ptr<pool::page_locked_memory> memory_;
  std::unique_ptr<pool::block_pool> pool_;
};

} // namespace
} // namespace cuplug::plugins

CUPLUG_PLUGIN(allocator, cuplug::plugins::pinned_allocator, "pinned",
              "page-locked host memory from cuMemHostAlloc (options: flags, pooled)",
              CUPLUG_PLUGIN_VERSION)
