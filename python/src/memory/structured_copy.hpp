// Memcpy2D / Memcpy3D / Memcpy3DPeer state: a CUDA copy descriptor plus references to what its
// pointers point into, so nothing dangles and extents are checked before the driver sees them.
#pragma once

#include "driver/context.hpp"
#include "memory/held_buffer.hpp"
#include "memory/memory.hpp"
#include "support/convert.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

namespace cuplug::python {

// What one side (source or destination) of a structured copy points into. PyCUDA stores only
// the raw pointer; we keep the buffer exported / the allocation referenced until it is replaced.
struct copy_side {
  enum class region { unknown, host, device };
  std::unique_ptr<held_buffer> buffer; // host buffer (set_*_host / set_*_unified)
  py::object keep;                     // DeviceAllocation, Array, ...
  region kind = region::unknown;       // which descriptor field [low, high) bounds
  std::uintptr_t low = 0, high = 0;

  void reset() {
    buffer.reset();
    keep = py::object();
    kind = region::unknown;
  }
  void hold_buffer(py::handle obj, int flags, const char *routine, const char *role, region where) {
    auto held = std::make_unique<held_buffer>(obj, flags, routine, role);
    reset();
    std::tie(low, high) = held->span();
    buffer = std::move(held);
    kind = where;
  }
  // The context of the DeviceAllocation this side points into; null for anything else.
  const context_ptr &device_context() const {
    static const context_ptr none;
    if (kind == region::device && keep)
      if (device_allocation *a = as_device_allocation(keep))
        return a->get_context();
    return none;
  }
  // A device pointer: a DeviceAllocation bounds the region, a plain int does not.
  CUdeviceptr hold_device(py::handle obj) {
    CUdeviceptr ptr = to_devptr(obj);
    reset();
    if (device_allocation *a = as_device_allocation(obj)) {
      keep = py::reinterpret_borrow<py::object>(obj);
      kind = region::device;
      low = a->ptr();
      high = low + a->size();
    }
    return ptr;
  }
};

// Geometry of one side: offsets and pitch from the descriptor.
struct copy_geometry {
  std::size_t x, y, z, pitch, slice_rows;
};

// Memory types are returned as memory_type enum members when that enum is bound, else as ints.
inline py::object memory_type_object(CUmemorytype t) {
  try {
    return py::cast(t);
  } catch (const py::cast_error &) {
    return py::int_(static_cast<int>(t));
  }
}

template <class Desc> class structured_copy {
public:
  static constexpr bool is_3d = !std::is_same_v<Desc, CUDA_MEMCPY2D>;
  static constexpr bool is_peer = std::is_same_v<Desc, CUDA_MEMCPY3D_PEER>;

  structured_copy() { std::memset(&desc, 0, sizeof desc); }

  Desc desc;
  copy_side src, dst;
  context_ptr src_context, dst_context; // Memcpy3DPeer only

  void set_src_host(py::handle buf) {
    src.hold_buffer(buf, PyBUF_STRIDED_RO, "set_src_host", "the source", copy_side::region::host);
    desc.srcMemoryType = CU_MEMORYTYPE_HOST;
    desc.srcHost = src.buffer->data();
  }
  void set_dst_host(py::handle buf) {
    dst.hold_buffer(buf, PyBUF_STRIDED | PyBUF_WRITABLE, "set_dst_host", "the destination",
                    copy_side::region::host);
    desc.dstMemoryType = CU_MEMORYTYPE_HOST;
    desc.dstHost = dst.buffer->data();
  }
  void set_src_device(py::handle ptr) {
    desc.srcDevice = src.hold_device(ptr);
    desc.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  }
  void set_dst_device(py::handle ptr) {
    desc.dstDevice = dst.hold_device(ptr);
    desc.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  }
  // Unified addressing: the address goes in srcDevice (CUDA's rule; PyCUDA wrote srcHost).
  // Accepts a host buffer (e.g. a managed_empty array) or any device pointer.
  void set_src_unified(py::handle obj) {
    desc.srcDevice = unified_address(src, obj, false, "set_src_unified", "the source");
    desc.srcHost = reinterpret_cast<const void *>(desc.srcDevice);
    desc.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  }
  void set_dst_unified(py::handle obj) {
    desc.dstDevice = unified_address(dst, obj, true, "set_dst_unified", "the destination");
    desc.dstHost = reinterpret_cast<void *>(desc.dstDevice);
    desc.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  }
  // Arrays (cuArray*) are any object with an int `handle`; kept referenced.
  void set_src_array(py::handle ary) {
    desc.srcArray = array_handle(ary);
    src.reset();
    src.keep = py::reinterpret_borrow<py::object>(ary);
    desc.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  }
  void set_dst_array(py::handle ary) {
    desc.dstArray = array_handle(ary);
    dst.reset();
    dst.keep = py::reinterpret_borrow<py::object>(ary);
    desc.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  }

  // The context of a DeviceAllocation either side points into (null when neither does), made
  // current for the copy when the calling thread has none.
  const context_ptr &device_context() const {
    const context_ptr &ctx = src.device_context();
    return ctx ? ctx : dst.device_context();
  }

  // Raises ValueError when either side reaches outside the buffer / allocation it was set from.
  void check_extents(const char *routine) const {
    const std::size_t depth = depth_of(desc);
    check_side(routine, "source", src, desc.srcMemoryType,
               reinterpret_cast<std::uintptr_t>(desc.srcHost), desc.srcDevice, src_geometry(),
               depth);
    check_side(routine, "destination", dst, desc.dstMemoryType,
               reinterpret_cast<std::uintptr_t>(desc.dstHost), desc.dstDevice, dst_geometry(),
               depth);
  }

  copy_geometry src_geometry() const {
    if constexpr (is_3d)
      return {desc.srcXInBytes, desc.srcY, desc.srcZ, desc.srcPitch, desc.srcHeight};
    else
      return {desc.srcXInBytes, desc.srcY, 0, desc.srcPitch, 0};
  }
  copy_geometry dst_geometry() const {
    if constexpr (is_3d)
      return {desc.dstXInBytes, desc.dstY, desc.dstZ, desc.dstPitch, desc.dstHeight};
    else
      return {desc.dstXInBytes, desc.dstY, 0, desc.dstPitch, 0};
  }

private:
  static std::size_t depth_of(const Desc &d) {
    if constexpr (is_3d)
      return d.Depth;
    else
      return 1;
  }

  static CUdeviceptr unified_address(copy_side &side, py::handle obj, bool writable,
                                     const char *routine, const char *role) {
    if (PyObject_CheckBuffer(obj.ptr())) {
      side.hold_buffer(obj, writable ? (PyBUF_STRIDED | PyBUF_WRITABLE) : PyBUF_STRIDED_RO, routine,
                       role, copy_side::region::device);
      return reinterpret_cast<CUdeviceptr>(side.buffer->data());
    }
    return side.hold_device(obj);
  }

  static CUarray array_handle(py::handle ary) {
    py::object handle = ary.attr("handle");
    return reinterpret_cast<CUarray>(
        static_cast<std::uintptr_t>(handle.cast<unsigned long long>()));
  }

  void check_side(const char *routine, const char *role, const copy_side &side, CUmemorytype type,
                  std::uintptr_t host, CUdeviceptr device, const copy_geometry &g,
                  std::size_t depth) const {
    std::uintptr_t base;
    if (side.kind == copy_side::region::host && type == CU_MEMORYTYPE_HOST)
      base = host;
    else if (side.kind == copy_side::region::device &&
             (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED))
      base = static_cast<std::uintptr_t>(device);
    else
      return; // arrays, raw ints, or a pointer field changed behind the setter's back
    const std::size_t width = desc.WidthInBytes, height = desc.Height;
    if (width == 0 || height == 0 || depth == 0)
      return;
    const std::uintptr_t first = base + g.x + (g.y + g.z * g.slice_rows) * g.pitch;
    const std::uintptr_t last_row = (g.z + depth - 1) * g.slice_rows + g.y + height - 1;
    const std::uintptr_t end = base + g.x + last_row * g.pitch + width;
    if (first >= side.low && end <= side.high)
      return;
    const char *what = side.kind == copy_side::region::host ? "host buffer" : "device allocation";
    std::string msg = std::string(routine) + ": the " + role + " region [" +
                      std::to_string(static_cast<long long>(first - side.low)) + ", " +
                      std::to_string(static_cast<long long>(end - side.low)) +
                      ") lies outside its " + std::to_string(side.high - side.low) + "-byte " +
                      what + " (x_in_bytes=" + std::to_string(g.x) + ", y=" + std::to_string(g.y) +
                      ", pitch=" + std::to_string(g.pitch) +
                      ", width_in_bytes=" + std::to_string(width) +
                      ", height=" + std::to_string(height);
    if (is_3d)
      msg += ", z=" + std::to_string(g.z) + ", rows per slice=" + std::to_string(g.slice_rows) +
             ", depth=" + std::to_string(depth);
    throw py::value_error(msg + ")");
  }
};

using memcpy_2d = structured_copy<CUDA_MEMCPY2D>;
using memcpy_3d = structured_copy<CUDA_MEMCPY3D>;
using memcpy_3d_peer = structured_copy<CUDA_MEMCPY3D_PEER>;

} // namespace cuplug::python
