// The "device" allocator: every allocation is its own cuMemAlloc, every release a cuMemFree.
#pragma once

#include <cuplug/allocator.hpp>

namespace cuplug::plugins {

// Synchronous device memory with no caching: the stream is ignored (cuMemAlloc memory is usable
// on every stream, and cuMemFree waits for work using it). The simplest correct baseline, and
// the upstream the pooling allocators are measured against. Takes no options.
class device_allocator final : public allocator {
public:
  explicit device_allocator(const options &opts);

private:
  device_ptr do_allocate(std::size_t bytes, CUstream stream) override;
  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) override;
  memory_kind do_kind() const override { return memory_kind::device; }
};

} // namespace cuplug::plugins
