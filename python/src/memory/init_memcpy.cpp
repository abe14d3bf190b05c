// Copies and fills: memcpy_htod/dtoh/dtod/peer (+ _async), memset_d8..d2d32 (+ _async),
// Memcpy2D / Memcpy3D / Memcpy3DPeer. The GIL is released around every driver call.
#include "bindings.hpp"
#include "driver/activation.hpp"
#include "driver/context.hpp"
#include "memory/held_buffer.hpp"
#include "memory/memory.hpp"
#include "memory/structured_copy.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>

namespace cuplug::python {
namespace {

// A fill value of T's width; negative values are taken as two's complement (memset_d32(p, -1, n)).
template <class T> T fill_value(py::handle value, const char *routine) {
  if (PyFloat_Check(value.ptr()) || !PyIndex_Check(value.ptr()))
    throw py::type_error(std::string(routine) + ": data must be an integer, got " +
                         type_name(value));
  long long v = py::int_(py::reinterpret_borrow<py::object>(value)).cast<long long>();
  constexpr int bits = 8 * sizeof(T);
  const long long lowest = -(1LL << (bits - 1));
  const long long highest = static_cast<long long>(std::numeric_limits<T>::max());
  if (v < lowest || v > highest)
    throw py::value_error(std::string(routine) + ": data " + std::to_string(v) +
                          " does not fit in " + std::to_string(bits) + " bits");
  return static_cast<T>(static_cast<unsigned long long>(v));
}

// Where the device size is known (a DeviceAllocation), a copy must fit in it.
void check_fits(py::handle device_obj, std::size_t bytes, const char *routine, const char *role,
                const char *other) {
  device_allocation *a = as_device_allocation(device_obj);
  if (a != nullptr && bytes > a->size())
    throw py::value_error(std::string(routine) + ": " + other + " is " + std::to_string(bytes) +
                          " bytes but the " + role + " DeviceAllocation has only " +
                          std::to_string(a->size()) + " bytes");
}

// The context of a DeviceAllocation argument, made current for the call when the thread has
// none (allocations work from any thread); null for plain pointers, whose context is unknown.
const context_ptr &context_of(py::handle device_obj) {
  static const context_ptr none;
  device_allocation *a = as_device_allocation(device_obj);
  return a != nullptr ? a->get_context() : none;
}

const context_ptr &context_of(py::handle first, py::handle second) {
  const context_ptr &ctx = context_of(first);
  return ctx ? ctx : context_of(second);
}

context_ptr context_or_current(py::handle ctx, const char *routine, const char *name) {
  if (ctx.is_none())
    return context::current_or_throw();
  try {
    return ctx.cast<context_ptr>();
  } catch (const py::cast_error &) {
    throw py::type_error(std::string(routine) + ": " + name + " must be a Context or None, got " +
                         type_name(ctx));
  }
}

// ---- 1-D copies ---------------------------------------------------------------------------------

void memcpy_htod(py::handle dest, py::handle src, std::optional<CUstream> stream) {
  const char *routine = stream ? "memcpy_htod_async" : "memcpy_htod";
  CUdeviceptr d = to_devptr(dest);
  held_buffer buf(src, PyBUF_ANY_CONTIGUOUS, routine, "src");
  check_fits(dest, buf.size(), routine, "destination", "the source buffer");
  scoped_activation_if_none active(context_of(dest));
  if (stream)
    CUPLUG_CALL_NOGIL(cuMemcpyHtoDAsync, d, buf.data(), buf.size(), *stream);
  else
    CUPLUG_CALL_NOGIL(cuMemcpyHtoD, d, buf.data(), buf.size());
}

void memcpy_dtoh(py::handle dest, py::handle src, std::optional<CUstream> stream) {
  const char *routine = stream ? "memcpy_dtoh_async" : "memcpy_dtoh";
  CUdeviceptr s = to_devptr(src);
  held_buffer buf(dest, PyBUF_ANY_CONTIGUOUS | PyBUF_WRITABLE, routine, "dest");
  check_fits(src, buf.size(), routine, "source", "the destination buffer");
  scoped_activation_if_none active(context_of(src));
  if (stream)
    CUPLUG_CALL_NOGIL(cuMemcpyDtoHAsync, buf.data(), s, buf.size(), *stream);
  else
    CUPLUG_CALL_NOGIL(cuMemcpyDtoH, buf.data(), s, buf.size());
}

void memcpy_dtod(py::handle dest, py::handle src, py::handle size_obj,
                 std::optional<CUstream> stream) {
  const char *routine = stream ? "memcpy_dtod_async" : "memcpy_dtod";
  CUdeviceptr d = to_devptr(dest), s = to_devptr(src);
  std::size_t size = to_size(size_obj, (std::string(routine) + ": size").c_str());
  check_fits(dest, size, routine, "destination", "the copy");
  check_fits(src, size, routine, "source", "the copy");
  scoped_activation_if_none active(context_of(dest, src));
  if (stream)
    CUPLUG_CALL_NOGIL(cuMemcpyDtoDAsync, d, s, size, *stream);
  else
    CUPLUG_CALL_NOGIL(cuMemcpyDtoD, d, s, size);
}

// A passed context is used; None means the current one (PyCUDA inverted this test).
void memcpy_peer(py::handle dest, py::handle src, py::handle size_obj, py::handle dest_ctx,
                 py::handle src_ctx, std::optional<CUstream> stream) {
  const char *routine = stream ? "memcpy_peer_async" : "memcpy_peer";
  CUdeviceptr d = to_devptr(dest), s = to_devptr(src);
  std::size_t size = to_size(size_obj, (std::string(routine) + ": size").c_str());
  check_fits(dest, size, routine, "destination", "the copy");
  check_fits(src, size, routine, "source", "the copy");
  context_ptr dc = context_or_current(dest_ctx, routine, "dest_context");
  context_ptr sc = context_or_current(src_ctx, routine, "src_context");
  if (stream)
    CUPLUG_CALL_NOGIL(cuMemcpyPeerAsync, d, dc->handle(), s, sc->handle(), size, *stream);
  else
    CUPLUG_CALL_NOGIL(cuMemcpyPeer, d, dc->handle(), s, sc->handle(), size);
}

// ---- memset -------------------------------------------------------------------------------------

template <class T> struct memset_calls;
// One specialisation per width: the driver has a separate entry point for each, named after it.
#define CUPLUG_MEMSET_CALLS(T, bits)                                                               \
  template <> struct memset_calls<T> {                                                             \
    static constexpr const char *name = "memset_d" #bits;                                          \
    static constexpr const char *name_2d = "memset_d2d" #bits;                                     \
    static void fill(CUdeviceptr d, T v, std::size_t n, const CUstream *s) {                       \
      if (s)                                                                                       \
        CUPLUG_CALL_NOGIL(cuMemsetD##bits##Async, d, v, n, *s);                                    \
      else                                                                                         \
        CUPLUG_CALL_NOGIL(cuMemsetD##bits, d, v, n);                                               \
    }                                                                                              \
    static void fill_2d(CUdeviceptr d, std::size_t pitch, T v, std::size_t w, std::size_t h,       \
                        const CUstream *s) {                                                       \
      if (s)                                                                                       \
        CUPLUG_CALL_NOGIL(cuMemsetD2D##bits##Async, d, pitch, v, w, h, *s);                        \
      else                                                                                         \
        CUPLUG_CALL_NOGIL(cuMemsetD2D##bits, d, pitch, v, w, h);                                   \
    }                                                                                              \
  }
CUPLUG_MEMSET_CALLS(unsigned char, 8);
CUPLUG_MEMSET_CALLS(unsigned short, 16);
CUPLUG_MEMSET_CALLS(unsigned int, 32);
#undef CUPLUG_MEMSET_CALLS

template <class T> void bind_memset(py::module_ &m) {
  using calls = memset_calls<T>;
  static const std::string async_name = std::string(calls::name) + "_async";
  static const std::string async_name_2d = std::string(calls::name_2d) + "_async";

  auto fill = [](const char *routine, py::handle dest, py::handle data, py::handle size,
                 const CUstream *stream) {
    CUdeviceptr d = to_devptr(dest);
    T value = fill_value<T>(data, routine);
    std::size_t n = to_size(size, (std::string(routine) + ": size").c_str());
    check_fits(dest, n * sizeof(T), routine, "destination", "the fill");
    scoped_activation_if_none active(context_of(dest));
    calls::fill(d, value, n, stream);
  };
  auto fill_2d = [](const char *routine, py::handle dest, py::handle pitch, py::handle data,
                    py::handle width, py::handle height, const CUstream *stream) {
    CUdeviceptr d = to_devptr(dest);
    T value = fill_value<T>(data, routine);
    std::size_t p = to_size(pitch, (std::string(routine) + ": pitch").c_str());
    std::size_t w = to_size(width, (std::string(routine) + ": width").c_str());
    std::size_t h = to_size(height, (std::string(routine) + ": height").c_str());
    if (h != 0 && w != 0)
      check_fits(dest, (h - 1) * p + w * sizeof(T), routine, "destination", "the fill");
    scoped_activation_if_none active(context_of(dest));
    calls::fill_2d(d, p, value, w, h, stream);
  };

  static const std::string doc_1d =
      std::string("Fills device memory with `size` ") + std::to_string(8 * sizeof(T)) +
      "-bit values (cuMemsetD" + std::to_string(8 * sizeof(T)) +
      ")." CUPLUG_DOC_PARAMS
      "dest : DeviceAllocation | int\n    The device memory (a DeviceAllocation is "
      "bounds-checked).\n"
      "data : int\n    The value of each element; negative values are two's complement.\n"
      "size : int\n    How many elements to fill (elements, not bytes).\n";
  static const std::string doc_1d_async = doc_1d + CUPLUG_DOC_STREAM_PARAM;
  static const std::string doc_2d =
      std::string("Fills a pitched 2D area of device memory with ") +
      std::to_string(8 * sizeof(T)) +
      "-bit values." CUPLUG_DOC_PARAMS
      "dest : DeviceAllocation | int\n    The first row's device memory.\n"
      "pitch : int\n    Bytes from one row's start to the next's.\n"
      "data : int\n    The value of each element; negative values are two's complement.\n"
      "width : int\n    Elements per row (elements, not bytes).\n"
      "height : int\n    Rows.\n";
  static const std::string doc_2d_async = doc_2d + CUPLUG_DOC_STREAM_PARAM;
  m.def(
      calls::name,
      [fill](hint::device_ptr dest, hint::fill_value data, hint::size size) {
        fill(calls::name, dest, data, size, nullptr);
      },
      py::arg("dest"), py::arg("data"), py::arg("size"), doc_1d.c_str());
  m.def(
      async_name.c_str(),
      [fill](hint::device_ptr dest, hint::fill_value data, hint::size size, hint::stream stream) {
        CUstream s = to_stream(stream);
        fill(async_name.c_str(), dest, data, size, &s);
      },
      py::arg("dest"), py::arg("data"), py::arg("size"), py::arg("stream") = py::none(),
      doc_1d_async.c_str());
  m.def(
      calls::name_2d,
      [fill_2d](hint::device_ptr dest, hint::size pitch, hint::fill_value data, hint::size width,
                hint::size height) {
        fill_2d(calls::name_2d, dest, pitch, data, width, height, nullptr);
      },
      py::arg("dest"), py::arg("pitch"), py::arg("data"), py::arg("width"), py::arg("height"),
      doc_2d.c_str());
  m.def(
      async_name_2d.c_str(),
      [fill_2d](hint::device_ptr dest, hint::size pitch, hint::fill_value data, hint::size width,
                hint::size height, hint::stream stream) {
        CUstream s = to_stream(stream);
        fill_2d(async_name_2d.c_str(), dest, pitch, data, width, height, &s);
      },
      py::arg("dest"), py::arg("pitch"), py::arg("data"), py::arg("width"), py::arg("height"),
      py::arg("stream") = py::none(), doc_2d_async.c_str());
}

// ---- Memcpy2D / Memcpy3D / Memcpy3DPeer ---------------------------------------------------------

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

void bind_structured_copies(py::module_ &m) {
  bind_structured<CUDA_MEMCPY2D>(
      m, "Memcpy2D",
      "A 2D copy between host memory, device memory and CUDA arrays (cuMemcpy2D): set a source "
      "and a destination (set_src_* / set_dst_*), the offsets, pitches and extents, then call it.")
      .def(
          "__call__",
          [](memcpy_2d &c, bool aligned) {
            c.check_extents("Memcpy2D");
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

} // namespace

void init_memcpy(py::module_ &m) {
  m.def(
      "_check_host_buffer",
      [](py::handle obj, bool writable, const std::string &routine, const std::string &role,
         bool contiguous) {
        const int layout = contiguous ? PyBUF_ANY_CONTIGUOUS : PyBUF_FULL_RO;
        held_buffer(obj, layout | (writable ? PyBUF_WRITABLE : 0), routine.c_str(), role.c_str());
      },
      py::arg("obj"), py::arg("writable"), py::arg("routine"), py::arg("role"),
      py::arg("contiguous") = true,
      "Raises what memcpy_htod (writable=False) or memcpy_dtoh (True) would raise for `obj` as "
      "its host buffer: not a buffer, not contiguous, read-only, or holding Python objects.");
  m.def(
      "memcpy_htod",
      [](hint::device_ptr d, hint::host_buffer s) { memcpy_htod(d, s, std::nullopt); },
      py::arg("dest"), py::arg("src"),
      "Copies a contiguous host buffer to device memory, waiting until it is "
      "done." CUPLUG_DOC_PARAMS
      "dest : DeviceAllocation | int\n    The device memory (a DeviceAllocation is "
      "bounds-checked).\n"
      "src : collections.abc.Buffer\n    A contiguous host buffer; all its bytes are copied.\n");
  m.def(
      "memcpy_htod_async",
      [](hint::device_ptr d, hint::host_buffer s, hint::stream stream) {
        memcpy_htod(d, s, to_stream(stream));
      },
      py::arg("dest"), py::arg("src"), py::arg("stream") = py::none(),
      "Copies a contiguous host buffer to device memory, ordered on `stream` (asynchronous "
      "only from pagelocked memory)." CUPLUG_DOC_PARAMS
      "dest : DeviceAllocation | int\n    The device memory.\n"
      "src : collections.abc.Buffer\n    A contiguous host buffer; keep it alive and unchanged "
      "until the copy is done.\n" CUPLUG_DOC_STREAM_PARAM);
  m.def(
      "memcpy_dtoh",
      [](hint::host_buffer d, hint::device_ptr s) { memcpy_dtoh(d, s, std::nullopt); },
      py::arg("dest"), py::arg("src"),
      "Fills a writable contiguous host buffer from device memory, waiting until it is "
      "done." CUPLUG_DOC_PARAMS
      "dest : collections.abc.Buffer\n    A writable contiguous host buffer; all its bytes are "
      "filled.\n"
      "src : DeviceAllocation | int\n    The device memory (a DeviceAllocation is "
      "bounds-checked).\n");
  m.def(
      "memcpy_dtoh_async",
      [](hint::host_buffer d, hint::device_ptr s, hint::stream stream) {
        memcpy_dtoh(d, s, to_stream(stream));
      },
      py::arg("dest"), py::arg("src"), py::arg("stream") = py::none(),
      "Fills a writable contiguous host buffer from device memory, ordered on `stream` "
      "(asynchronous only into pagelocked memory)." CUPLUG_DOC_PARAMS
      "dest : collections.abc.Buffer\n    A writable contiguous host buffer.\n"
      "src : DeviceAllocation | int\n    The device memory.\n" CUPLUG_DOC_STREAM_PARAM);
  m.def(
      "memcpy_dtod",
      [](hint::device_ptr d, hint::device_ptr s, hint::size n) {
        memcpy_dtod(d, s, n, std::nullopt);
      },
      py::arg("dest"), py::arg("src"), py::arg("size"),
      "Copies between two areas of device memory." CUPLUG_DOC_PARAMS
      "dest : DeviceAllocation | int\n    The destination.\n"
      "src : DeviceAllocation | int\n    The source.\n"
      "size : int\n    Bytes to copy.\n");
  m.def(
      "memcpy_dtod_async",
      [](hint::device_ptr d, hint::device_ptr s, hint::size n, hint::stream stream) {
        memcpy_dtod(d, s, n, to_stream(stream));
      },
      py::arg("dest"), py::arg("src"), py::arg("size"), py::arg("stream") = py::none(),
      "Copies between two areas of device memory, ordered on `stream`." CUPLUG_DOC_PARAMS
      "dest : DeviceAllocation | int\n    The destination.\n"
      "src : DeviceAllocation | int\n    The source.\n"
      "size : int\n    Bytes to copy.\n" CUPLUG_DOC_STREAM_PARAM);
  m.def(
      "memcpy_peer",
      [](hint::device_ptr d, hint::device_ptr s, hint::size n, hint::context_or_none dc,
         hint::context_or_none sc) { memcpy_peer(d, s, n, dc, sc, std::nullopt); },
      py::arg("dest"), py::arg("src"), py::arg("size"), py::arg("dest_context") = py::none(),
      py::arg("src_context") = py::none(),
      "Copies between device memory of two contexts (cuMemcpyPeer)." CUPLUG_DOC_PARAMS
      "dest : DeviceAllocation | int\n    The destination.\n"
      "src : DeviceAllocation | int\n    The source.\n"
      "size : int\n    Bytes to copy.\n"
      "dest_context, src_context : Context | None\n    The contexts the memory belongs to; "
      "None: the current one.\n");
  m.def(
      "memcpy_peer_async",
      [](hint::device_ptr d, hint::device_ptr s, hint::size n, hint::context_or_none dc,
         hint::context_or_none sc,
         hint::stream stream) { memcpy_peer(d, s, n, dc, sc, to_stream(stream)); },
      py::arg("dest"), py::arg("src"), py::arg("size"), py::arg("dest_context") = py::none(),
      py::arg("src_context") = py::none(), py::arg("stream") = py::none(),
      "Copies between device memory of two contexts, ordered on `stream`." CUPLUG_DOC_PARAMS
      "dest : DeviceAllocation | int\n    The destination.\n"
      "src : DeviceAllocation | int\n    The source.\n"
      "size : int\n    Bytes to copy.\n"
      "dest_context, src_context : Context | None\n    The contexts the memory belongs to; "
      "None: the current one.\n" CUPLUG_DOC_STREAM_PARAM);

  bind_memset<unsigned char>(m);
  bind_memset<unsigned short>(m);
  bind_memset<unsigned int>(m);

  bind_structured_copies(m);
}

} // namespace cuplug::python
