// Array memory: the array allocator choice and allocation with out-of-memory recovery.
#include "array/array_memory.hpp"

#include "array/array_object.hpp"
#include "memory/context_allocators.hpp"
#include "support/nvtx_ranges.hpp"

#include <cuplug/backends.hpp>
#include <cuplug/config.hpp>

#include <string>
#include <vector>

namespace cuplug::python::array {

namespace {

// The default pools, one per context: a pool's blocks belong to the context they were allocated
// in, so a pool shared by contexts would hand one context's (possibly destroyed) memory to
// another. Released by release_array_pools(), which cuplug.tools.clear_context_caches() calls.
context_allocators &default_pools() {
  static auto *pools = new context_allocators(); // leaked: exit order
  return *pools;
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
    return per_context(ctx, selected);
  return default_pools().get(ctx, nullptr, [] {
    return registry::instance().create<allocator>(
        plugin_kind::allocator, "pool",
        config::instance().plugin_options(plugin_kind::allocator, "pool"));
  });
}

plugin_ptr<allocator> array_allocator() { return array_allocator(context::current()); }

std::size_t release_array_pools() noexcept {
  return default_pools().release() + release_per_context();
}

void release_array_pools(CUcontext handle, unsigned long long) noexcept {
  default_pools().release_context(handle);
  release_per_context(handle);
}

std::size_t array_pool_count() noexcept { return default_pools().size(); }

std::vector<std::pair<CUdevice, plugin_ptr<allocator>>> array_pool_instances() {
  std::vector<std::pair<CUdevice, plugin_ptr<allocator>>> out;
  for (auto &pool : default_pools().instances())
    out.emplace_back(pool.device, std::move(pool.alloc));
  return out;
}

device_allocation_ptr allocate_array_memory(std::size_t bytes, CUstream stream,
                                            py::handle stream_owner) {
  context_ptr ctx = context::current_or_throw("GPUArray");
  plugin_ptr<allocator> alloc = array_allocator(ctx);
  nvtx_range range{"cuplug alloc", bytes_payload(bytes)};
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

void throw_context_gone(const array_object *a) {
  const context_ptr &ctx = a->memory->get_context();
  throw cuda_error("GPUArray", CUDA_ERROR_CONTEXT_IS_DESTROYED,
                   "the array's context (device " + std::to_string(ctx->device()) +
                       ") was detached and destroyed, and its memory with it; the array can no "
                       "longer be used (make it again in a live context)");
}

void throw_no_memory(const array_object *a) {
  throw cuda_error("GPUArray", CUDA_ERROR_INVALID_VALUE,
                   "the array has " + std::to_string(a->size) +
                       " elements but no memory: its gpudata is a null pointer (its allocator "
                       "returned 0); set gpudata to its memory before using it");
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
