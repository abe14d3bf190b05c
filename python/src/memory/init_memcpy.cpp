// Copies and fills: memcpy_htod/dtoh/dtod/peer (+ _async), memset_d8..d2d32 (+ _async). The GIL
// is released around every driver call. Memcpy2D / Memcpy3D / Memcpy3DPeer are in
// init_structured_copies.cpp.
#include "bindings.hpp"
#include "driver/activation.hpp"
#include "driver/context.hpp"
#include "memory/held_buffer.hpp"
#include "memory/memory.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"
#include "support/nvtx_ranges.hpp"

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
  nvtx_range range{"cuplug htod", bytes_payload(buf.size())};
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
  nvtx_range range{"cuplug dtoh", bytes_payload(buf.size())};
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
  nvtx_range range{"cuplug dtod", bytes_payload(size)};
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
  nvtx_range range{"cuplug peer copy", bytes_payload(size)};
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
}

} // namespace cuplug::python
