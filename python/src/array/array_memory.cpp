// Array memory: the array allocator choice and allocation with out-of-memory recovery.
#include "array/array_memory.hpp"

#include "array/array_object.hpp"

#include <cuplug/backends.hpp>
#include <cuplug/config.hpp>

#include <string>
#include <unordered_map>
#include <vector>

namespace cuplug::python::array {

namespace {

// The default pools, one per context: a pool's blocks belong to the context they were allocated
// in, so a pool shared by contexts would hand one context's (possibly destroyed) memory to
// another. Each entry holds its context (as PyCUDA's DeviceMemoryPool does while it holds
// blocks) until release_array_pools(), which cuplug.tools.clear_context_caches() calls.
struct context_pool {
  context_ptr ctx;
  plugin_ptr<allocator> pool;
};

std::unordered_map<CUcontext, context_pool> &context_pools() {
  static auto *pools = new std::unordered_map<CUcontext, context_pool>(); // leaked: exit order
  return *pools;
}

// A pool whose context was destroyed: its blocks went with the context, and freeing them (or
// its stream fences) now would be a call on dead handles. It is kept, never destroyed.
void abandon(plugin_ptr<allocator> pool) {
  static auto *graveyard = new std::vector<plugin_ptr<allocator>>();
  graveyard->push_back(std::move(pool));
}

// Drops a pool: its held blocks and fences are released under its own context.
void drop(context_pool &entry) noexcept {
  if (!entry.pool)
    return;
  if (!entry.ctx || !entry.ctx->valid()) {
    abandon(std::move(entry.pool));
    return;
  }
  try {
    scoped_activation active(entry.ctx);
    entry.pool->free_held();
    entry.pool.reset();
  } catch (...) {
    if (entry.pool)
      abandon(std::move(entry.pool));
  }
}

bool default_selected() {
  return config::instance().selected(plugin_kind::allocator).source ==
             config_source::builtin_default &&
         registry::instance().has(plugin_kind::allocator, "pool");
}

} // namespace

plugin_ptr<allocator> array_allocator(const context_ptr &ctx) {
  // The selected backend when one was chosen; the answer is cached per thread while the
  // configuration generation and the selected object stay the same.
  struct slot {
    unsigned long generation = 0;
    const allocator *selected = nullptr;
    bool use_pool = false;
  };
  thread_local slot mine;
  plugin_ptr<allocator> selected = current_allocator();
  const unsigned long generation = config::instance().generation();
  if (!(mine.generation == generation && mine.selected == selected.get() && mine.selected))
    mine = slot{generation, selected.get(), default_selected()};
  if (!mine.use_pool || !ctx)
    return selected;
  context_pool &entry = context_pools()[ctx->handle()];
  // Every Context object of one CUcontext (each retain_primary_context() makes one) shares the
  // pool: the entry's own context is still valid, so the handle still names the same context.
  if (!entry.pool || (entry.ctx != ctx && !entry.ctx->valid())) {
    // A new context that got a destroyed one's handle: that one's pool goes first.
    drop(entry);
    entry.pool = registry::instance().create<allocator>(
        plugin_kind::allocator, "pool",
        config::instance().plugin_options(plugin_kind::allocator, "pool"));
    entry.ctx = ctx;
  }
  return entry.pool;
}

plugin_ptr<allocator> array_allocator() { return array_allocator(context::current()); }

std::size_t release_array_pools() noexcept {
  std::size_t released = 0;
  auto &pools = context_pools();
  for (auto &[handle, entry] : pools) {
    if (entry.pool && entry.ctx && entry.ctx->valid())
      released += entry.pool->stats().bytes_held;
    drop(entry);
  }
  pools.clear();
  return released;
}

device_allocation_ptr allocate_array_memory(std::size_t bytes, CUstream stream,
                                            py::handle stream_owner) {
  context_ptr ctx = context::current_or_throw("GPUArray");
  plugin_ptr<allocator> alloc = array_allocator(ctx);
  std::uintptr_t ptr = 0;
  try {
    ptr = alloc->allocate(bytes, stream);
  } catch (const cuda_error &e) {
    if (e.code() != CUDA_ERROR_OUT_OF_MEMORY)
      throw;
    // Pools give back what they hold; arrays dropped but not yet collected free theirs.
    if (alloc->can_free_held())
      alloc->free_held();
    py::module_::import("gc").attr("collect")();
    try {
      ptr = alloc->allocate(bytes, stream);
    } catch (const cuda_error &again) {
      if (again.code() != CUDA_ERROR_OUT_OF_MEMORY)
        throw;
      allocator_stats stats = alloc->stats();
      throw out_of_memory("GPUArray", bytes, stats.bytes_in_use, stats.bytes_held, 0,
                          "allocator '" + alloc->backend_name() +
                              "'; freeing held memory, gc.collect() and a retry did not help (" +
                              again.what() + ")");
    }
  }
  py::object owner;
  if (!stream_owner.is_none() && !PyLong_Check(stream_owner.ptr()))
    owner = py::reinterpret_borrow<py::object>(stream_owner);
  return std::make_shared<device_allocation>(std::move(ctx), static_cast<CUdeviceptr>(ptr), bytes,
                                             std::move(alloc), stream, std::move(owner));
}

void allocate_memory(array_object *a, py::handle allocator_obj, CUstream stream,
                     py::handle stream_owner) {
  const std::size_t bytes = static_cast<std::size_t>(a->size) * a->itemsize;
  if (bytes == 0) {
    a->ctx = current_context_handle();
    return;
  }
  if (allocator_obj.is_none()) {
    a->memory = allocate_array_memory(bytes, stream, stream_owner);
    a->ptr = a->memory->ptr();
    a->ctx = a->memory->get_context()->handle();
    return;
  }
  // PyCUDA's allocator protocol: a callable taking a byte count, returning a pointer object.
  py::object gpudata = py::reinterpret_borrow<py::object>(allocator_obj)(bytes);
  attach_gpudata(a, gpudata, py::none());
}

} // namespace cuplug::python::array
