// Array memory: the array allocator choice and allocation with out-of-memory recovery.
#include "array/array_memory.hpp"

#include "array/array_object.hpp"

#include <cuplug/backends.hpp>
#include <cuplug/config.hpp>

#include <string>

namespace cuplug::python::array {

plugin_ptr<allocator> array_allocator() {
  // Per thread, like the core's own cache: valid while the configuration generation and the
  // selected allocator object stay the same.
  struct slot {
    unsigned long generation = 0;
    const allocator *selected = nullptr;
    plugin_ptr<allocator> object;
  };
  thread_local slot mine;
  plugin_ptr<allocator> selected = current_allocator();
  const unsigned long generation = config::instance().generation();
  if (mine.object && mine.generation == generation && mine.selected == selected.get())
    return mine.object;
  plugin_ptr<allocator> chosen = selected;
  if (config::instance().selected(plugin_kind::allocator).source ==
          config_source::builtin_default &&
      registry::instance().has(plugin_kind::allocator, "pool"))
    chosen = std::static_pointer_cast<allocator>(backend(plugin_kind::allocator, "pool"));
  mine = slot{generation, selected.get(), chosen};
  return chosen;
}

device_allocation_ptr allocate_array_memory(std::size_t bytes, CUstream stream,
                                            py::handle stream_owner) {
  context_ptr ctx = context::current_or_throw("GPUArray");
  plugin_ptr<allocator> alloc = array_allocator();
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
