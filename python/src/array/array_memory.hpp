// Device memory for arrays: the allocator backend arrays use (a caching pool unless one was
// chosen), with out-of-memory recovery.
#pragma once

#include "memory/memory.hpp"

#include <cuplug/allocator.hpp>
#include <cuplug/registry.hpp>

#include <cstddef>
#include <utility>
#include <vector>

namespace cuplug::python::array {

// The allocator arrays use in context `ctx`: the selected backend when one was chosen
// (cuplug.use, environment, config file), else a caching pool ("pool" plugin) of that context's
// own, falling back to the selected backend when no pool plugin is there. Needs the GIL.
plugin_ptr<allocator> array_allocator(const context_ptr &ctx);
// The same for the current context.
plugin_ptr<allocator> array_allocator();
// Gives back what the per-context pools hold and forgets them (releasing their contexts);
// returns the bytes released. Arrays still alive keep their own memory.
std::size_t release_array_pools() noexcept;
// The pools of the context `handle`, about to be destroyed (a context destroy listener).
void release_array_pools(CUcontext handle, unsigned long long serial) noexcept;
// Contexts with a default array pool (tests: they must not pile up as contexts come and go).
std::size_t array_pool_count() noexcept;
// The default array pools of live contexts, with each context's device (memory.summary()).
std::vector<std::pair<CUdevice, plugin_ptr<allocator>>> array_pool_instances();

// `bytes` (> 0) for work on `stream` in the current context from array_allocator(). On out of
// memory: frees what the allocator holds, runs gc.collect() (dropped arrays may hold memory),
// retries, then raises MemoryError naming the size, the allocator and its bytes in use / held.
// `stream_owner` is kept alive with the allocation (the Python stream object, or None).
device_allocation_ptr allocate_array_memory(std::size_t bytes, CUstream stream,
                                            py::handle stream_owner);

} // namespace cuplug::python::array
