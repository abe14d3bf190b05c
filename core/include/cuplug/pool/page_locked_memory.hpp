// Page-locked host memory from cuMemHostAlloc with fixed flags: the upstream of pinned pools.
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/plugin_abi.hpp>

#include <string>

namespace cuplug::pool {

// `raw` as cuMemHostAlloc flags (CU_MEMHOSTALLOC_PORTABLE | DEVICEMAP | WRITECOMBINED); anything
// else throws config_error "<what> is <raw>, expected a combination of ...". `what` names the
// value for the message ("allocator 'pinned': option 'flags'").
CUPLUG_API unsigned host_alloc_flags(long long raw, const std::string &what);

// Every allocation is its own cuMemHostAlloc(flags), every release a cuMemFreeHost; no caching
// (put a block_pool over it for that). Page-locked memory is usable by every stream and
// cuMemFreeHost waits for the device, so the stream is ignored. Memory kind pinned_host.
class CUPLUG_API page_locked_memory final : public allocator {
public:
  // config_error for flags that are not cuMemHostAlloc flags.
  explicit page_locked_memory(unsigned flags);
  unsigned flags() const noexcept { return flags_; }

private:
  device_ptr do_allocate(std::size_t bytes, CUstream stream) override;
  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) override;
  memory_kind do_kind() const override { return memory_kind::pinned_host; }

  const unsigned flags_;
};

} // namespace cuplug::pool
