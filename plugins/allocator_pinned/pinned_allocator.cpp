// The "pinned" allocator: page-locked host memory from cuMemHostAlloc, plain or pooled.
#include "../allocator_pool/block_pool.hpp"
#include "../allocator_pool/cuda_event_fences.hpp"

#include <cuplug/allocator.hpp>
#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/options.hpp>
#include <cuplug/plugin.hpp>

#include <cuda.h>

#include <memory>
#include <string>

namespace cuplug::plugins {
namespace {

// cuMemHostAlloc / cuMemFreeHost with fixed flags.
class page_locked_memory final : public allocator {
public:
  explicit page_locked_memory(unsigned flags) : flags_(flags) {}

private:
  std::uintptr_t do_allocate(std::size_t bytes, CUstream) override {
    void *p = nullptr;
    const CUresult r = detail::entry(driver().cuMemHostAlloc, "cuMemHostAlloc")(&p, bytes, flags_);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      throw out_of_memory("cuMemHostAlloc", bytes, stats().bytes_in_use, 0, 0);
    check(r, "cuMemHostAlloc");
    return reinterpret_cast<std::uintptr_t>(p);
  }
  void do_deallocate(std::uintptr_t ptr, std::size_t, CUstream) override {
    CUPLUG_CALL(cuMemFreeHost, reinterpret_cast<void *>(ptr));
  }
  memory_kind do_kind() const override { return memory_kind::pinned_host; }

  const unsigned flags_;
};

unsigned host_alloc_flags(const options &opts) {
  const long long raw = opts.get_int("flags", 0);
  constexpr long long known =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (raw < 0 || (raw & ~known) != 0)
    throw config_error("allocator 'pinned': option 'flags' is " + std::to_string(raw) +
                       ", expected a combination of CU_MEMHOSTALLOC_PORTABLE (1), DEVICEMAP (2) "
                       "and WRITECOMBINED (4)");
  auto flags = static_cast<unsigned>(raw);
  if (opts.get_bool("portable", false))
    flags |= CU_MEMHOSTALLOC_PORTABLE;
  if (opts.get_bool("devicemap", false))
    flags |= CU_MEMHOSTALLOC_DEVICEMAP;
  if (opts.get_bool("writecombined", false))
    flags |= CU_MEMHOSTALLOC_WRITECOMBINED;
  return flags;
}

// Options: `flags` (cuMemHostAlloc flags, default 0) or the booleans `portable`, `devicemap`,
// `writecombined`; `pooled` (bool, default false) caches freed blocks with the pool's algorithm
// (PyCUDA's PageLockedMemoryPool). Pooled blocks follow the pool's stream order for device work
// on them; host code that writes a block it took must first wait for the work that used it
// before it was freed, as with any pinned buffer.
class pinned_allocator final : public allocator {
public:
  explicit pinned_allocator(const options &opts)
      : memory_(std::make_shared<page_locked_memory>(host_alloc_flags(opts))) {
    memory_->set_backend_name("pinned");
    if (opts.get_bool("pooled", false))
      pool_ =
          std::make_unique<pool::block_pool>(memory_, std::make_shared<pool::cuda_event_fences>());
  }

protected:
  std::size_t do_bytes_held() const override { return pool_ ? pool_->counters().held_bytes : 0; }

private:
  std::uintptr_t do_allocate(std::size_t bytes, CUstream stream) override {
    return pool_ ? pool_->allocate(bytes, stream) : memory_->allocate(bytes, stream);
  }
  void do_deallocate(std::uintptr_t ptr, std::size_t bytes, CUstream stream) override {
    if (pool_)
      pool_->deallocate(ptr, bytes, stream);
    else
      memory_->deallocate(ptr, bytes, stream);
  }
  memory_kind do_kind() const override { return memory_kind::pinned_host; }
  bool do_can_free_held() const override { return pool_ != nullptr; }
  std::size_t do_free_held() override {
    if (!pool_)
      throw not_supported("allocator 'pinned' holds no memory to free (it is not pooled; "
                          "set option pooled=true for a pool)");
    return pool_->free_held();
  }
  std::size_t do_trim(std::size_t keep_bytes) override {
    if (!pool_)
      throw not_supported("allocator 'pinned' cannot trim: it is not pooled");
    return pool_->trim(keep_bytes);
  }

  std::shared_ptr<page_locked_memory> memory_;
  std::unique_ptr<pool::block_pool> pool_;
};

} // namespace
} // namespace cuplug::plugins

CUPLUG_PLUGIN(allocator, cuplug::plugins::pinned_allocator, "pinned",
              "page-locked host memory from cuMemHostAlloc (options: flags, pooled)",
              CUPLUG_PLUGIN_VERSION)
