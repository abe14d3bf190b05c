// An observer of the allocations made through any allocator's door (cuplug.memory's history).
#pragma once

#include <cuplug/plugin.hpp>

#include <cuda.h>

#include <cstddef>

namespace cuplug {

class allocator;

// Told of the outermost allocate() / deallocate() of every allocator: a pool's calls to its
// upstream, made inside its own door, are not reported (the user's block is the pool's), nor is
// anything done inside an observer. Called on the allocating thread, after a successful
// allocate and before a deallocate gives the block back; no allocator lock is held. Must not
// throw and must not allocate through an allocator.
class allocation_observer {
public:
  virtual ~allocation_observer() = default;
  virtual void allocated(const allocator &a, device_ptr ptr, std::size_t bytes,
                         CUstream stream) noexcept = 0;
  virtual void deallocated(const allocator &a, device_ptr ptr, std::size_t bytes) noexcept = 0;
};

// Installs `observer` (null: none, the default). While none is installed an allocator's door
// costs one relaxed atomic load more. The observer must outlive every allocator call that may
// have seen it: install one that is never destroyed.
CUPLUG_API void set_allocation_observer(allocation_observer *observer) noexcept;
CUPLUG_API allocation_observer *current_allocation_observer() noexcept;

} // namespace cuplug
