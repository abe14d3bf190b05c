// Copies and fills: memcpy_htod/dtoh/dtod/peer (+ _async), memset_d8..d2d32 (+ _async),
// Memcpy2D / Memcpy3D / Memcpy3DPeer. The GIL is released around every driver call.
#include "bindings.hpp"
#include "driver/activation.hpp"
#include "driver/context.hpp"
#include "memory/held_buffer.hpp"
#include "memory/memory.hpp"
#include "memory/structured_copy.hpp"
#include "support/convert.hpp"

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

  m.def(
      calls::name,
      [fill](py::handle dest, py::handle data, py::handle size) {
        fill(calls::name, dest, data, size, nullptr);
      },
      py::arg("dest"), py::arg("data"), py::arg("size"), "Fills `size` elements (not bytes).");
  m.def(
      async_name.c_str(),
      [fill](py::handle dest, py::handle data, py::handle size, py::handle stream) {
        CUstream s = to_stream(stream);
        fill(async_name.c_str(), dest, data, size, &s);
      },
      py::arg("dest"), py::arg("data"), py::arg("size"), py::arg("stream") = py::none());
  m.def(
      calls::name_2d,
      [fill_2d](py::handle dest, py::handle pitch, py::handle data, py::handle width,
                py::handle height) {
        fill_2d(calls::name_2d, dest, pitch, data, width, height, nullptr);
      },
      py::arg("dest"), py::arg("pitch"), py::arg("data"), py::arg("width"), py::arg("height"));
  m.def(
      async_name_2d.c_str(),
      [fill_2d](py::handle dest, py::handle pitch, py::handle data, py::handle width,
                py::handle height, py::handle stream) {
        CUstream s = to_stream(stream);
        fill_2d(async_name_2d.c_str(), dest, pitch, data, width, height, &s);
      },
      py::arg("dest"), py::arg("pitch"), py::arg("data"), py::arg("width"), py::arg("height"),
      py::arg("stream") = py::none());
}

// ---- Memcpy2D / Memcpy3D / Memcpy3DPeer ---------------------------------------------------------

#define CUPLUG_SIZE_FIELD(cls, pyname, member)                                                     \
  cls.def_property(                                                                                \
      pyname, [](const copy_type &c) { return static_cast<std::size_t>(c.desc.member); },          \
      [](copy_type &c, py::handle v) { c.desc.member = to_size(v, pyname); })
#define CUPLUG_MEMORY_TYPE_FIELD(cls, pyname, member)                                              \
  cls.def_property(                                                                                \
      pyname, [](const copy_type &c) { return memory_type_object(c.desc.member); },                \
      [](copy_type &c, py::handle v) {                                                             \
        c.desc.member = static_cast<CUmemorytype>(                                                 \
            py::int_(py::reinterpret_borrow<py::object>(v)).template cast<int>());                 \
      })

template <class Desc>
py::class_<structured_copy<Desc>> bind_structured(py::module_ &m, const char *name) {
  using copy_type = structured_copy<Desc>;
  py::class_<copy_type> cls(m, name);
  cls.def(py::init<>());
  CUPLUG_SIZE_FIELD(cls, "src_x_in_bytes", srcXInBytes);
  CUPLUG_SIZE_FIELD(cls, "src_y", srcY);
  CUPLUG_SIZE_FIELD(cls, "src_pitch", srcPitch);
  CUPLUG_SIZE_FIELD(cls, "dst_x_in_bytes", dstXInBytes);
  CUPLUG_SIZE_FIELD(cls, "dst_y", dstY);
  CUPLUG_SIZE_FIELD(cls, "dst_pitch", dstPitch);
  CUPLUG_SIZE_FIELD(cls, "width_in_bytes", WidthInBytes);
  CUPLUG_SIZE_FIELD(cls, "height", Height);
  if constexpr (copy_type::is_3d) {
    CUPLUG_SIZE_FIELD(cls, "src_z", srcZ);
    CUPLUG_SIZE_FIELD(cls, "src_lod", srcLOD);
    CUPLUG_SIZE_FIELD(cls, "src_height", srcHeight);
    CUPLUG_SIZE_FIELD(cls, "dst_z", dstZ);
    CUPLUG_SIZE_FIELD(cls, "dst_lod", dstLOD);
    CUPLUG_SIZE_FIELD(cls, "dst_height", dstHeight);
    CUPLUG_SIZE_FIELD(cls, "depth", Depth);
  }
  CUPLUG_MEMORY_TYPE_FIELD(cls, "src_memory_type", srcMemoryType);
  CUPLUG_MEMORY_TYPE_FIELD(cls, "dst_memory_type", dstMemoryType);
  // Assigning a pointer keeps a DeviceAllocation referenced (and bounds-checked), like
  // set_*_device, but leaves the memory type alone, as PyCUDA's plain field does.
  cls.def_property(
      "src_device", [](const copy_type &c) { return static_cast<CUdeviceptr>(c.desc.srcDevice); },
      [](copy_type &c, py::handle v) { c.desc.srcDevice = c.src.hold_device(v); });
  cls.def_property(
      "dst_device", [](const copy_type &c) { return static_cast<CUdeviceptr>(c.desc.dstDevice); },
      [](copy_type &c, py::handle v) { c.desc.dstDevice = c.dst.hold_device(v); });

  cls.def("set_src_host", &copy_type::set_src_host, py::arg("buffer"),
          "Source is a host buffer (any strided buffer); it stays exported while set.");
  cls.def("set_dst_host", &copy_type::set_dst_host, py::arg("buffer"));
  cls.def("set_src_device", &copy_type::set_src_device, py::arg("ptr"));
  cls.def("set_dst_device", &copy_type::set_dst_device, py::arg("ptr"));
  cls.def("set_src_unified", &copy_type::set_src_unified, py::arg("buffer"));
  cls.def("set_dst_unified", &copy_type::set_dst_unified, py::arg("buffer"));
  cls.def("set_src_array", &copy_type::set_src_array, py::arg("ary"));
  cls.def("set_dst_array", &copy_type::set_dst_array, py::arg("ary"));
  return cls;
}
#undef CUPLUG_SIZE_FIELD
#undef CUPLUG_MEMORY_TYPE_FIELD

void bind_structured_copies(py::module_ &m) {
  bind_structured<CUDA_MEMCPY2D>(m, "Memcpy2D")
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
          "Copies now; aligned=False tolerates misaligned pitches (cuMemcpy2DUnaligned).")
      .def(
          "__call__",
          [](memcpy_2d &c, py::handle stream) {
            CUstream s = to_stream(stream);
            c.check_extents("Memcpy2D");
            scoped_activation_if_none active(c.device_context());
            CUDA_MEMCPY2D d = c.desc;
            CUPLUG_CALL_NOGIL(cuMemcpy2DAsync, &d, s);
          },
          py::arg("stream"), "Copies asynchronously on `stream` (cuMemcpy2DAsync).");

  bind_structured<CUDA_MEMCPY3D>(m, "Memcpy3D")
      .def("__call__",
           [](memcpy_3d &c) {
             c.check_extents("Memcpy3D");
             scoped_activation_if_none active(c.device_context());
             CUDA_MEMCPY3D d = c.desc;
             CUPLUG_CALL_NOGIL(cuMemcpy3D, &d);
           })
      .def(
          "__call__",
          [](memcpy_3d &c, py::handle stream) {
            CUstream s = to_stream(stream);
            c.check_extents("Memcpy3D");
            scoped_activation_if_none active(c.device_context());
            CUDA_MEMCPY3D d = c.desc;
            CUPLUG_CALL_NOGIL(cuMemcpy3DAsync, &d, s);
          },
          py::arg("stream"));

  // Contexts left unset are the current one at call time.
  auto peer_desc = [](memcpy_3d_peer &c) {
    c.check_extents("Memcpy3DPeer");
    CUDA_MEMCPY3D_PEER d = c.desc;
    d.srcContext = (c.src_context ? c.src_context : context::current_or_throw())->handle();
    d.dstContext = (c.dst_context ? c.dst_context : context::current_or_throw())->handle();
    return d;
  };
  bind_structured<CUDA_MEMCPY3D_PEER>(m, "Memcpy3DPeer")
      .def(
          "set_src_context",
          [](memcpy_3d_peer &c, context_ptr ctx) { c.src_context = std::move(ctx); },
          py::arg("ctx"))
      .def(
          "set_dst_context",
          [](memcpy_3d_peer &c, context_ptr ctx) { c.dst_context = std::move(ctx); },
          py::arg("ctx"))
      .def("__call__",
           [peer_desc](memcpy_3d_peer &c) {
             CUDA_MEMCPY3D_PEER d = peer_desc(c);
             CUPLUG_CALL_NOGIL(cuMemcpy3DPeer, &d);
           })
      .def(
          "__call__",
          [peer_desc](memcpy_3d_peer &c, py::handle stream) {
            CUstream s = to_stream(stream);
            CUDA_MEMCPY3D_PEER d = peer_desc(c);
            CUPLUG_CALL_NOGIL(cuMemcpy3DPeerAsync, &d, s);
          },
          py::arg("stream"));
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
      "memcpy_htod", [](py::handle d, py::handle s) { memcpy_htod(d, s, std::nullopt); },
      py::arg("dest"), py::arg("src"), "Copies a contiguous host buffer to device memory.");
  m.def(
      "memcpy_htod_async",
      [](py::handle d, py::handle s, py::handle stream) { memcpy_htod(d, s, to_stream(stream)); },
      py::arg("dest"), py::arg("src"), py::arg("stream") = py::none());
  m.def(
      "memcpy_dtoh", [](py::handle d, py::handle s) { memcpy_dtoh(d, s, std::nullopt); },
      py::arg("dest"), py::arg("src"), "Fills a writable contiguous host buffer from the device.");
  m.def(
      "memcpy_dtoh_async",
      [](py::handle d, py::handle s, py::handle stream) { memcpy_dtoh(d, s, to_stream(stream)); },
      py::arg("dest"), py::arg("src"), py::arg("stream") = py::none());
  m.def(
      "memcpy_dtod",
      [](py::handle d, py::handle s, py::handle n) { memcpy_dtod(d, s, n, std::nullopt); },
      py::arg("dest"), py::arg("src"), py::arg("size"));
  m.def(
      "memcpy_dtod_async",
      [](py::handle d, py::handle s, py::handle n, py::handle stream) {
        memcpy_dtod(d, s, n, to_stream(stream));
      },
      py::arg("dest"), py::arg("src"), py::arg("size"), py::arg("stream") = py::none());
  m.def(
      "memcpy_peer",
      [](py::handle d, py::handle s, py::handle n, py::handle dc, py::handle sc) {
        memcpy_peer(d, s, n, dc, sc, std::nullopt);
      },
      py::arg("dest"), py::arg("src"), py::arg("size"), py::arg("dest_context") = py::none(),
      py::arg("src_context") = py::none(),
      "Copies between contexts; a context left as None is the current one.");
  m.def(
      "memcpy_peer_async",
      [](py::handle d, py::handle s, py::handle n, py::handle dc, py::handle sc,
         py::handle stream) { memcpy_peer(d, s, n, dc, sc, to_stream(stream)); },
      py::arg("dest"), py::arg("src"), py::arg("size"), py::arg("dest_context") = py::none(),
      py::arg("src_context") = py::none(), py::arg("stream") = py::none());

  bind_memset<unsigned char>(m);
  bind_memset<unsigned short>(m);
  bind_memset<unsigned int>(m);

  bind_structured_copies(m);
}

} // namespace cuplug::python
