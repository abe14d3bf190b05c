// DeviceAllocation as a C++ class, shared with the launcher and GPUArray code so that they can
// read a device pointer, or allocate, without a Python call.
#pragma once

#include "driver/context.hpp"
#include "support/convert.hpp"

#include <cuplug/allocator.hpp>
#include <cuplug/registry.hpp>

#include <cstddef>
#include <memory>

namespace cuplug::python {

// Device memory owned by a Python object (DeviceAllocation, ManagedAllocation). It comes either
// from an allocator backend (mem_alloc: given back with deallocate(ptr, bytes, stream) on the
// stream it was allocated for) or straight from the driver (mem_alloc_pitch, managed memory:
// cuMemFree). It holds its context (so the context outlives it), its allocator (so the plugin
// stays loaded) and the Python object its stream came from (so the stream outlives it). Released
// by free() or on destruction, under its own context; a failed release prints PyCUDA's clean-up
// warning and never throws. Python holds it through std::shared_ptr.
class device_allocation {
public:
  // Memory from `alloc`. `stream_owner` is the Python object `stream` came from, or None.
  device_allocation(context_ptr ctx, CUdeviceptr ptr, std::size_t bytes,
                    plugin_ptr<allocator> alloc, CUstream stream, py::object stream_owner);
  // Memory from the driver, released with cuMemFree.
  device_allocation(context_ptr ctx, CUdeviceptr ptr, std::size_t bytes);
  virtual ~device_allocation();
  device_allocation(const device_allocation &) = delete;
  device_allocation &operator=(const device_allocation &) = delete;

  // The device pointer; LogicError "device_allocation::ptr failed: invalid resource handle -
  // allocation was freed" after free(), so freed memory never reaches a kernel or a copy.
  CUdeviceptr ptr() const {
    if (freed_)
      throw_freed("device_allocation::ptr");
    return ptr_;
  }
  std::size_t size() const noexcept { return bytes_; }
  bool freed() const noexcept { return freed_; }
  CUstream stream() const noexcept { return stream_; }
  // The owning context; null after free().
  const context_ptr &get_context() const noexcept { return ctx_; }
  // The backend that made it; null for driver memory.
  const plugin_ptr<allocator> &get_allocator() const noexcept { return allocator_; }

  // Releases now and drops the context. A second call raises LogicError
  // "device_allocation::free failed: invalid resource handle" (as PyCUDA).
  void free();

  [[noreturn]] static void throw_freed(const char *routine);

private:
  void release() noexcept;

  context_ptr ctx_;
  CUdeviceptr ptr_;
  std::size_t bytes_;
  plugin_ptr<allocator> allocator_;
  CUstream stream_ = nullptr;
  py::object stream_owner_;
  bool freed_ = false;
};

// Managed (unified) memory from cuMemAllocManaged: ManagedAllocation, a DeviceAllocation.
class managed_allocation : public device_allocation {
public:
  using device_allocation::device_allocation;
  // Allocates in the current context; flags are mem_attach_flags (GLOBAL or HOST).
  static std::shared_ptr<managed_allocation> allocate(std::size_t bytes, unsigned flags);
  // cuStreamAttachMemAsync over the whole allocation (length 0); stream 0 = legacy default.
  void attach(unsigned flags, CUstream stream);
};

using device_allocation_ptr = std::shared_ptr<device_allocation>;

// mem_alloc's C++ door: `bytes` from the selected allocator backend, for work on `stream`
// (anything to_stream accepts), in the current context. On out-of-memory it runs gc.collect()
// and retries once, then raises MemoryError naming the requested size. Needs the GIL.
device_allocation_ptr allocate_device(std::size_t bytes, py::handle stream = py::none());

// Fast path for argument packing and to_devptr: the allocation if `obj` is a DeviceAllocation
// (or subclass), nullptr otherwise. No Python call; never throws.
device_allocation *as_device_allocation(py::handle obj) noexcept;

// An allocator backend's statistics as Python sees them: a dict of bytes_in_use, peak_bytes and
// bytes_held (bytes), allocations, deallocations and failures (counts).
py::dict stats_dict(const allocator &a);

} // namespace cuplug::python
