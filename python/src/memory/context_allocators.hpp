// Allocator objects per context: caching allocators keep blocks of one context, so each context
// (each device) gets its own instance, shared by every Context object of that CUcontext.
#pragma once

#include "driver/context.hpp"

#include <cuplug/allocator.hpp>
#include <cuplug/registry.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace cuplug::python {

// Instances by (CUcontext, key). An entry holds its context (as PyCUDA's DeviceMemoryPool does
// while it holds blocks) until release(). A destroyed context's entry is abandoned, never
// destroyed: its blocks went with the context, and freeing them would be a call on dead handles.
// Not thread-safe: callers hold the GIL.
class context_allocators {
public:
  using factory = std::function<plugin_ptr<allocator>()>;

  // The instance for (ctx, key), made by `make` on first use. Every Context object of one live
  // CUcontext gets the same instance; a new context that got a destroyed one's handle gets a new
  // one.
  plugin_ptr<allocator> get(const context_ptr &ctx, const void *key, const factory &make);
  // Gives back what every instance holds (under its own context), forgets them and their
  // contexts; returns the bytes they held.
  std::size_t release() noexcept;
  // release() for the instances made under `key` alone.
  void release(const void *key) noexcept;
  // release() for the instances of the context `handle`, which is about to be destroyed (its
  // blocks are given back while it still lives).
  void release_context(CUcontext handle) noexcept;
  std::size_t size() const noexcept { return entries_.size(); }
  // One instance of a live context, with its context's device and its key (as an allocator: the
  // one it stands in for, or null).
  struct instance {
    CUdevice device;
    const allocator *stands_for;
    plugin_ptr<allocator> alloc;
  };
  // The instances of live contexts, in (context, key) order.
  std::vector<instance> instances() const;

private:
  using key_type = std::pair<CUcontext, const void *>;
  void release_if(const std::function<bool(const key_type &)> &which) noexcept;
  struct entry {
    context_ptr ctx;
    plugin_ptr<allocator> alloc;
  };
  static void drop(entry &e) noexcept;
  std::map<key_type, entry> entries_;
};

// The allocator object to use in `ctx` for the selected backend `selected`: `selected` itself in
// the first context it serves and wherever it caches nothing (can_free_held() false: the device,
// managed, async ones, which keep per-device state themselves); for caching ones (a pool chosen
// with cuplug.use) every other context gets its own instance of the same backend and options,
// so GPU 1 is never handed GPU 0's blocks. Null `ctx`: `selected`. Needs the GIL.
plugin_ptr<allocator> per_context(const context_ptr &ctx, const plugin_ptr<allocator> &selected);
// release() of per_context's instances (cuplug.tools.clear_context_caches).
std::size_t release_per_context() noexcept;
// The allocator objects per_context() serves now, with the device of the context each serves and
// the selected object each stands for (itself in its home context): the selected objects, then
// their instances for other contexts (memory.summary()).
std::vector<context_allocators::instance> per_context_instances();
// What per_context holds for the context `handle`, about to be destroyed: its clones are
// released, and a selected caching allocator whose home it was gives back its blocks and gets a
// new home in the next context that uses it.
void release_per_context(CUcontext handle) noexcept;

} // namespace cuplug::python
