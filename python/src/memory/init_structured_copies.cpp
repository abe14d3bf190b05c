// Memcpy2D / Memcpy3D / Memcpy3DPeer: copy descriptors (memory/structured_copy.hpp) filled in
// field by field from Python, then called, now or on a stream. The GIL is released around every
// driver call. The 1D copies and the fills are in init_memcpy.cpp.
#include "bindings.hpp"
#include "driver/activation.hpp"
#include "driver/context.hpp"
#include "memory/memory.hpp"
#include "memory/structured_copy.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"
#include "support/nvtx_ranges.hpp"

#include <string>
#include <utility>

namespace cuplug::python {
namespace {

// A setter whose value is named in signatures (pybind11 names a lambda's arguments arg0...).
template <class Cls, class F> py::cpp_function field_setter(const Cls &cls, F &&set) {
  return py::cpp_function(std::forward<F>(set), py::is_method(cls), py::arg("value"));
}

#define CUPLUG_SIZE_FIELD(cls, pyname, member, doc)                                                \
  cls.def_property(                                                                                \
      pyname, [](const copy_type &c) { return static_cast<std::size_t>(c.desc.member); },          \
      field_setter(cls, [](copy_type &c, hint::size v) { c.desc.member = to_size(v, pyname); }),   \
      doc)
#define CUPLUG_MEMORY_TYPE_FIELD(cls, pyname, member, doc)                                         \
  cls.def_property(                                                                                \
      pyname,                                                                                      \
      [](const copy_type &c) -> hint::memory_type { return memory_type_object(c.desc.member); },   \
      field_setter(cls,                                                                            \
                   [](copy_type &c, hint::memory_type v) {                                         \
                     c.desc.member = static_cast<CUmemorytype>(                                    \
                         py::int_(static_cast<py::object &>(v)).template cast<int>());             \
                   }),                                                                             \
      doc)

template <class Desc>
py::class_<structured_copy<Desc>> bind_structured(py::module_ &m, const char *name,
                                                  const char *doc) {
  using copy_type = structured_copy<Desc>;
  py::class_<copy_type> cls(m, name, doc);
  cls.def(py::init<>(), "An empty copy: set its source, destination and extents, then call it.");
  CUPLUG_SIZE_FIELD(cls, "src_x_in_bytes", srcXInBytes, "Source column offset, in bytes.");
  CUPLUG_SIZE_FIELD(cls, "src_y", srcY, "Source row offset, in rows.");
  CUPLUG_SIZE_FIELD(cls, "src_pitch", srcPitch, "Source row pitch, in bytes.");
  CUPLUG_SIZE_FIELD(cls, "dst_x_in_bytes", dstXInBytes, "Destination column offset, in bytes.");
  CUPLUG_SIZE_FIELD(cls, "dst_y", dstY, "Destination row offset, in rows.");
  CUPLUG_SIZE_FIELD(cls, "dst_pitch", dstPitch, "Destination row pitch, in bytes.");
  CUPLUG_SIZE_FIELD(cls, "width_in_bytes", WidthInBytes, "Width of the copied area, in bytes.");
  CUPLUG_SIZE_FIELD(cls, "height", Height, "Height of the copied area, in rows.");
  if constexpr (copy_type::is_3d) {
    CUPLUG_SIZE_FIELD(cls, "src_z", srcZ, "Source slice offset, in slices.");
    CUPLUG_SIZE_FIELD(cls, "src_lod", srcLOD, "Source mipmap level (must be 0).");
    CUPLUG_SIZE_FIELD(cls, "src_height", srcHeight, "Source slice height, in rows.");
    CUPLUG_SIZE_FIELD(cls, "dst_z", dstZ, "Destination slice offset, in slices.");
    CUPLUG_SIZE_FIELD(cls, "dst_lod", dstLOD, "Destination mipmap level (must be 0).");
    CUPLUG_SIZE_FIELD(cls, "dst_height", dstHeight, "Destination slice height, in rows.");
    CUPLUG_SIZE_FIELD(cls, "depth", Depth, "Depth of the copied volume, in slices.");
  }
  CUPLUG_MEMORY_TYPE_FIELD(cls, "src_memory_type", srcMemoryType,
                           "The source's memory_type (set by the set_src_* methods).");
  CUPLUG_MEMORY_TYPE_FIELD(cls, "dst_memory_type", dstMemoryType,
                           "The destination's memory_type (set by the set_dst_* methods).");
  // Assigning a pointer keeps a DeviceAllocation referenced (and bounds-checked), like
  // set_*_device, but leaves the memory type alone, as PyCUDA's plain field does.
  cls.def_property(
      "src_device", [](const copy_type &c) { return static_cast<CUdeviceptr>(c.desc.srcDevice); },
      field_setter(
          cls, [](copy_type &c, hint::device_ptr v) { c.desc.srcDevice = c.src.hold_device(v); }),
      "The source device address, an int (a DeviceAllocation assigned stays referenced).");
  cls.def_property(
      "dst_device", [](const copy_type &c) { return static_cast<CUdeviceptr>(c.desc.dstDevice); },
      field_setter(
          cls, [](copy_type &c, hint::device_ptr v) { c.desc.dstDevice = c.dst.hold_device(v); }),
      "The destination device address, an int (a DeviceAllocation assigned stays referenced).");

  cls.def(
      "set_src_host", [](copy_type &c, hint::host_buffer b) { c.set_src_host(b); },
      py::arg("buffer"),
      "Makes a host buffer the source." CUPLUG_DOC_PARAMS
      "buffer : collections.abc.Buffer\n    Any strided host buffer; it stays exported (and "
      "alive) while set.\n");
  cls.def(
      "set_dst_host", [](copy_type &c, hint::host_buffer b) { c.set_dst_host(b); },
      py::arg("buffer"),
      "Makes a writable host buffer the destination." CUPLUG_DOC_PARAMS
      "buffer : collections.abc.Buffer\n    Any writable strided host buffer; it stays "
      "exported (and alive) while set.\n");
  cls.def(
      "set_src_device", [](copy_type &c, hint::device_ptr p) { c.set_src_device(p); },
      py::arg("ptr"),
      "Makes device memory the source." CUPLUG_DOC_PARAMS
      "ptr : DeviceAllocation | int\n    The source's first byte (a DeviceAllocation stays "
      "referenced and bounds-checked).\n");
  cls.def(
      "set_dst_device", [](copy_type &c, hint::device_ptr p) { c.set_dst_device(p); },
      py::arg("ptr"),
      "Makes device memory the destination." CUPLUG_DOC_PARAMS
      "ptr : DeviceAllocation | int\n    The destination's first byte (a DeviceAllocation "
      "stays referenced and bounds-checked).\n");
  cls.def(
      "set_src_unified", [](copy_type &c, hint::host_buffer b) { c.set_src_unified(b); },
      py::arg("buffer"),
      "Makes unified (managed or mapped) memory the source." CUPLUG_DOC_PARAMS
      "buffer : collections.abc.Buffer\n    A buffer over unified memory (a "
      "ManagedAllocation, a mapped pagelocked array).\n");
  cls.def(
      "set_dst_unified", [](copy_type &c, hint::host_buffer b) { c.set_dst_unified(b); },
      py::arg("buffer"),
      "Makes unified (managed or mapped) memory the destination." CUPLUG_DOC_PARAMS
      "buffer : collections.abc.Buffer\n    A writable buffer over unified memory.\n");
  cls.def(
      "set_src_array", [](copy_type &c, hint::array a) { c.set_src_array(a); }, py::arg("ary"),
      "Makes a CUDA array the source." CUPLUG_DOC_PARAMS
      "ary : Array\n    The source array; it stays referenced while set.\n");
  cls.def(
      "set_dst_array", [](copy_type &c, hint::array a) { c.set_dst_array(a); }, py::arg("ary"),
      "Makes a CUDA array the destination." CUPLUG_DOC_PARAMS
      "ary : Array\n    The destination array; it stays referenced while set.\n");
  return cls;
}
#undef CUPLUG_SIZE_FIELD
#undef CUPLUG_MEMORY_TYPE_FIELD

} // namespace

void init_structured_copies(py::module_ &m) {
  bind_structured<CUDA_MEMCPY2D>(
      m, "Memcpy2D",
      "A 2D copy between host memory, device memory and CUDA arrays (cuMemcpy2D): set a source "
      "and a destination (set_src_* / set_dst_*), the offsets, pitches and extents, then call it.")
      .def(
          "__call__",
          [](memcpy_2d &c, bool aligned) {
            c.check_extents("Memcpy2D");
            nvtx_range range{"cuplug 2D copy"};
            scoped_activation_if_none active(c.device_context());
            CUDA_MEMCPY2D d = c.desc;
            if (aligned)
              CUPLUG_CALL_NOGIL(cuMemcpy2D, &d);
            else
              CUPLUG_CALL_NOGIL(cuMemcpy2DUnaligned, &d);
          },
          py::arg("aligned") = true,
          "Copies now, waiting until it is done." CUPLUG_DOC_PARAMS
          "aligned : bool\n    False tolerates pitches the driver's aligned copy refuses "
          "(cuMemcpy2DUnaligned).\n")
      .def(
          "__call__",
          [](memcpy_2d &c, hint::stream stream) {
            CUstream s = to_stream(stream);
            c.check_extents("Memcpy2D");
            nvtx_range range{"cuplug 2D copy"};
            scoped_activation_if_none active(c.device_context());
            CUDA_MEMCPY2D d = c.desc;
            CUPLUG_CALL_NOGIL(cuMemcpy2DAsync, &d, s);
          },
          py::arg("stream"),
          "Copies asynchronously (cuMemcpy2DAsync)." CUPLUG_DOC_PARAMS CUPLUG_DOC_STREAM_PARAM);

  bind_structured<CUDA_MEMCPY3D>(
      m, "Memcpy3D",
      "A 3D copy between host memory, device memory and CUDA arrays (cuMemcpy3D): set a source "
      "and a destination, the offsets, pitches and extents, then call it.")
      .def(
          "__call__",
          [](memcpy_3d &c) {
            c.check_extents("Memcpy3D");
            nvtx_range range{"cuplug 3D copy"};
            scoped_activation_if_none active(c.device_context());
            CUDA_MEMCPY3D d = c.desc;
            CUPLUG_CALL_NOGIL(cuMemcpy3D, &d);
          },
          "Copies now, waiting until it is done.")
      .def(
          "__call__",
          [](memcpy_3d &c, hint::stream stream) {
            CUstream s = to_stream(stream);
            c.check_extents("Memcpy3D");
            nvtx_range range{"cuplug 3D copy"};
            scoped_activation_if_none active(c.device_context());
            CUDA_MEMCPY3D d = c.desc;
            CUPLUG_CALL_NOGIL(cuMemcpy3DAsync, &d, s);
          },
          py::arg("stream"),
          "Copies asynchronously (cuMemcpy3DAsync)." CUPLUG_DOC_PARAMS CUPLUG_DOC_STREAM_PARAM);

  // Contexts left unset are the current one at call time.
  auto peer_desc = [](memcpy_3d_peer &c) {
    c.check_extents("Memcpy3DPeer");
    CUDA_MEMCPY3D_PEER d = c.desc;
    d.srcContext = (c.src_context ? c.src_context : context::current_or_throw())->handle();
    d.dstContext = (c.dst_context ? c.dst_context : context::current_or_throw())->handle();
    return d;
  };
  bind_structured<CUDA_MEMCPY3D_PEER>(
      m, "Memcpy3DPeer",
      "A 3D copy between contexts (cuMemcpy3DPeer): like Memcpy3D, plus the source's and the "
      "destination's contexts (the current one where left unset).")
      .def(
          "set_src_context",
          [](memcpy_3d_peer &c, context_ptr ctx) { c.src_context = std::move(ctx); },
          py::arg("ctx"),
          "Sets the source's context." CUPLUG_DOC_PARAMS
          "ctx : Context\n    The context the source memory belongs to.\n")
      .def(
          "set_dst_context",
          [](memcpy_3d_peer &c, context_ptr ctx) { c.dst_context = std::move(ctx); },
          py::arg("ctx"),
          "Sets the destination's context." CUPLUG_DOC_PARAMS
          "ctx : Context\n    The context the destination memory belongs to.\n")
      .def(
          "__call__",
          [peer_desc](memcpy_3d_peer &c) {
            CUDA_MEMCPY3D_PEER d = peer_desc(c);
            CUPLUG_CALL_NOGIL(cuMemcpy3DPeer, &d);
          },
          "Copies now, waiting until it is done.")
      .def(
          "__call__",
          [peer_desc](memcpy_3d_peer &c, hint::stream stream) {
            CUstream s = to_stream(stream);
            CUDA_MEMCPY3D_PEER d = peer_desc(c);
            CUPLUG_CALL_NOGIL(cuMemcpy3DPeerAsync, &d, s);
          },
          py::arg("stream"),
          "Copies asynchronously (cuMemcpy3DPeerAsync)." CUPLUG_DOC_PARAMS CUPLUG_DOC_STREAM_PARAM);
}

} // namespace cuplug::python
