// CUDA arrays: ArrayDescriptor, ArrayDescriptor3D, Array and the copies to and from arrays
// (memcpy_htoa / atoh / dtoa / atod / atoa, spec §1.9-1.10). The GIL is released around copies.
#include "bindings.hpp"
#include "driver/activation.hpp"
#include "memory/cuda_array.hpp"
#include "memory/held_buffer.hpp"
#include "memory/memory.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"
#include "support/nvtx_ranges.hpp"

#include <cstdint>
#include <string>

namespace cuplug::python {

// ---- cuda_array ---------------------------------------------------------------------------------

std::size_t channel_bytes(CUarray_format format) noexcept {
  switch (format) {
  case CU_AD_FORMAT_UNSIGNED_INT8:
  case CU_AD_FORMAT_SIGNED_INT8:
    return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16:
  case CU_AD_FORMAT_SIGNED_INT16:
  case CU_AD_FORMAT_HALF:
    return 2;
  case CU_AD_FORMAT_UNSIGNED_INT32:
  case CU_AD_FORMAT_SIGNED_INT32:
  case CU_AD_FORMAT_FLOAT:
    return 4;
  default:
    return 0;
  }
}

cuda_array::cuda_array(const CUDA_ARRAY_DESCRIPTOR &desc) {
  CUPLUG_CALL(cuArrayCreate, &handle_, &desc);
  desc_.Width = desc.Width;
  desc_.Height = desc.Height;
  desc_.Format = desc.Format;
  desc_.NumChannels = desc.NumChannels;
}

cuda_array::cuda_array(const CUDA_ARRAY3D_DESCRIPTOR &desc) : desc_(desc) {
  CUPLUG_CALL(cuArray3DCreate, &handle_, &desc);
}

std::shared_ptr<cuda_array> cuda_array::borrowed(CUarray handle, std::shared_ptr<void> owner) {
  std::shared_ptr<cuda_array> a(new cuda_array);
  CUPLUG_CALL(cuArray3DGetDescriptor, &a->desc_, handle);
  a->handle_ = handle;
  a->owner_ = std::move(owner);
  a->borrowed_ = true;
  return a;
}

cuda_array::~cuda_array() { free(); }

void cuda_array::free() {
  if (handle_ == nullptr || borrowed_) {
    handle_ = nullptr;
    owner_.reset();
    return;
  }
  CUarray doomed = handle_;
  handle_ = nullptr;
  release_under(get_context(), "cuArrayDestroy", [doomed] {
    return detail::entry(driver().cuArrayDestroy, "cuArrayDestroy")(doomed);
  });
}

CUarray cuda_array::handle(const char *routine) const {
  if (handle_ == nullptr)
    throw cuda_error(routine, CUDA_ERROR_INVALID_HANDLE, "array was freed");
  return handle_;
}

std::size_t cuda_array::element_bytes() const noexcept {
  return channel_bytes(desc_.Format) * desc_.NumChannels;
}

std::size_t cuda_array::total_bytes() const noexcept {
  const std::size_t rows = desc_.Height ? desc_.Height : 1, slices = desc_.Depth ? desc_.Depth : 1;
  return desc_.Width * element_bytes() * rows * slices;
}

cuda_array *as_cuda_array(py::handle obj) noexcept {
  static PyTypeObject *type = nullptr;
  if (type == nullptr) {
    try {
      type = reinterpret_cast<PyTypeObject *>(py::type::of<cuda_array>().ptr());
    } catch (...) {
      return nullptr;
    }
  }
  if (!PyObject_TypeCheck(obj.ptr(), type))
    return nullptr;
  try {
    return &obj.cast<cuda_array &>();
  } catch (...) {
    return nullptr;
  }
}

namespace {

// ---- copies -------------------------------------------------------------------------------------

cuda_array &array_arg(py::handle obj, const char *routine, const char *name) {
  if (cuda_array *a = as_cuda_array(obj))
    return *a;
  throw py::type_error(std::string(routine) + ": " + name + " must be an Array, got " +
                       type_name(obj));
}

// [offset, offset + bytes) must lie inside the array's texels.
void check_in_array(const cuda_array &a, std::size_t offset, std::size_t bytes, const char *routine,
                    const char *role) {
  const std::size_t total = a.total_bytes();
  if (offset > total || bytes > total - offset)
    throw py::value_error(std::string(routine) + ": " + role + " bytes [" + std::to_string(offset) +
                          ", " + std::to_string(offset + bytes) + ") lie outside the " +
                          std::to_string(total) + "-byte Array");
}

// Where the device size is known (a DeviceAllocation), a copy must fit in it.
void check_in_allocation(py::handle device_obj, std::size_t bytes, const char *routine,
                         const char *role) {
  device_allocation *d = as_device_allocation(device_obj);
  if (d != nullptr && bytes > d->size())
    throw py::value_error(std::string(routine) + ": the copy is " + std::to_string(bytes) +
                          " bytes but the " + role + " DeviceAllocation has only " +
                          std::to_string(d->size()) + " bytes");
}

void memcpy_htoa(py::handle ary, py::handle index, py::handle src, const CUstream *stream) {
  const char *routine = stream ? "memcpy_htoa_async" : "memcpy_htoa";
  cuda_array &a = array_arg(ary, routine, "ary");
  const std::size_t offset = to_size(index, "memcpy_htoa: index");
  held_buffer buf(src, PyBUF_ANY_CONTIGUOUS, routine, "src");
  check_in_array(a, offset, buf.size(), routine, "the destination");
  CUarray h = a.handle(routine);
  nvtx_range range{"cuplug htoa", bytes_payload(buf.size())};
  scoped_activation_if_none active(a.get_context());
  if (stream)
    CUPLUG_CALL_NOGIL(cuMemcpyHtoAAsync, h, offset, buf.data(), buf.size(), *stream);
  else
    CUPLUG_CALL_NOGIL(cuMemcpyHtoA, h, offset, buf.data(), buf.size());
}

void memcpy_atoh(py::handle dest, py::handle ary, py::handle index, const CUstream *stream) {
  const char *routine = stream ? "memcpy_atoh_async" : "memcpy_atoh";
  cuda_array &a = array_arg(ary, routine, "ary");
  const std::size_t offset = to_size(index, "memcpy_atoh: index");
  held_buffer buf(dest, PyBUF_ANY_CONTIGUOUS | PyBUF_WRITABLE, routine, "dest");
  check_in_array(a, offset, buf.size(), routine, "the source");
  CUarray h = a.handle(routine);
  nvtx_range range{"cuplug atoh", bytes_payload(buf.size())};
  scoped_activation_if_none active(a.get_context());
  if (stream)
    CUPLUG_CALL_NOGIL(cuMemcpyAtoHAsync, buf.data(), h, offset, buf.size(), *stream);
  else
    CUPLUG_CALL_NOGIL(cuMemcpyAtoH, buf.data(), h, offset, buf.size());
}

void memcpy_dtoa(py::handle ary, py::handle index, py::handle src, py::handle len) {
  cuda_array &a = array_arg(ary, "memcpy_dtoa", "ary");
  const std::size_t offset = to_size(index, "memcpy_dtoa: index");
  const std::size_t bytes = to_size(len, "memcpy_dtoa: len");
  const CUdeviceptr s = to_devptr(src);
  check_in_array(a, offset, bytes, "memcpy_dtoa", "the destination");
  check_in_allocation(src, bytes, "memcpy_dtoa", "source");
  CUarray h = a.handle("memcpy_dtoa");
  nvtx_range range{"cuplug dtoa", bytes_payload(bytes)};
  scoped_activation_if_none active(a.get_context());
  CUPLUG_CALL_NOGIL(cuMemcpyDtoA, h, offset, s, bytes);
}

void memcpy_atod(py::handle dest, py::handle ary, py::handle index, py::handle len) {
  cuda_array &a = array_arg(ary, "memcpy_atod", "ary");
  const std::size_t offset = to_size(index, "memcpy_atod: index");
  const std::size_t bytes = to_size(len, "memcpy_atod: len");
  const CUdeviceptr d = to_devptr(dest);
  check_in_array(a, offset, bytes, "memcpy_atod", "the source");
  check_in_allocation(dest, bytes, "memcpy_atod", "destination");
  CUarray h = a.handle("memcpy_atod");
  nvtx_range range{"cuplug atod", bytes_payload(bytes)};
  scoped_activation_if_none active(a.get_context());
  CUPLUG_CALL_NOGIL(cuMemcpyAtoD, d, h, offset, bytes);
}

void memcpy_atoa(py::handle dest, py::handle dest_index, py::handle src, py::handle src_index,
                 py::handle len) {
  cuda_array &d = array_arg(dest, "memcpy_atoa", "dest");
  cuda_array &s = array_arg(src, "memcpy_atoa", "src");
  const std::size_t d_off = to_size(dest_index, "memcpy_atoa: dest_index");
  const std::size_t s_off = to_size(src_index, "memcpy_atoa: src_index");
  const std::size_t bytes = to_size(len, "memcpy_atoa: len");
  check_in_array(d, d_off, bytes, "memcpy_atoa", "the destination");
  check_in_array(s, s_off, bytes, "memcpy_atoa", "the source");
  CUarray dh = d.handle("memcpy_atoa"), sh = s.handle("memcpy_atoa");
  nvtx_range range{"cuplug atoa", bytes_payload(bytes)};
  scoped_activation_if_none active(d.get_context());
  CUPLUG_CALL_NOGIL(cuMemcpyAtoA, dh, d_off, sh, s_off, bytes);
}

// ---- descriptors --------------------------------------------------------------------------------

CUarray_format format_from(py::handle value) {
  if (PyFloat_Check(value.ptr()) || !PyIndex_Check(value.ptr()))
    throw py::type_error("format must be an array_format, got " + type_name(value));
  const int f = py::int_(py::reinterpret_borrow<py::object>(value)).cast<int>();
  return static_cast<CUarray_format>(f);
}

py::object format_object(CUarray_format f) {
  try {
    return py::cast(f);
  } catch (const py::cast_error &) {
    return py::int_(static_cast<int>(f));
  }
}

std::string format_name(CUarray_format f) { return py::str(format_object(f)); }

template <class Desc> std::string describe(const Desc &d, const char *cls) {
  std::string s = std::string(cls) + "(width=" + std::to_string(d.Width) +
                  ", height=" + std::to_string(d.Height);
  if constexpr (std::is_same_v<Desc, CUDA_ARRAY3D_DESCRIPTOR>)
    s += ", depth=" + std::to_string(d.Depth);
  s += ", format=" + format_name(d.Format) + ", num_channels=" + std::to_string(d.NumChannels);
  if constexpr (std::is_same_v<Desc, CUDA_ARRAY3D_DESCRIPTOR>)
    s += ", flags=" + std::to_string(d.Flags);
  return s + ")";
}

// A setter whose value is named in signatures (pybind11 names a lambda's arguments arg0...).
template <class Cls, class F> py::cpp_function field_setter(const Cls &cls, F &&set) {
  return py::cpp_function(std::forward<F>(set), py::is_method(cls), py::arg("value"));
}

#define CUPLUG_DESC_SIZE(cls, pyname, member, doc)                                                 \
  cls.def_property(                                                                                \
      pyname, [](const desc_type &d) { return static_cast<std::size_t>(d.member); },               \
      field_setter(cls, [](desc_type &d, hint::size v) { d.member = to_size(v, pyname); }), doc)

template <class Desc>
py::class_<Desc> bind_descriptor(py::module_ &m, const char *name, const char *doc) {
  using desc_type = Desc;
  py::class_<Desc> cls(m, name, doc);
  CUPLUG_DESC_SIZE(cls, "width", Width, "Width, in elements.");
  CUPLUG_DESC_SIZE(cls, "height", Height, "Height, in rows (0 for a 1D array).");
  CUPLUG_DESC_SIZE(cls, "num_channels", NumChannels, "Channels per element: 1, 2 or 4.");
  cls.def_property(
      "format", [](const Desc &d) -> hint::array_format { return format_object(d.Format); },
      field_setter(cls, [](Desc &d, hint::array_format v) { d.Format = format_from(v); }),
      "Each channel's format, an array_format.");
  cls.def("__repr__", [name](const Desc &d) { return describe(d, name); });
  return cls;
}

void bind_descriptors(py::module_ &m) {
  bind_descriptor<CUDA_ARRAY_DESCRIPTOR>(
      m, "ArrayDescriptor",
      "A 1D (height 0) or 2D CUDA array's shape and element format (CUDA_ARRAY_DESCRIPTOR).")
      .def(py::init([](hint::size width, hint::size height, hint::array_format format,
                       hint::size num_channels) {
             CUDA_ARRAY_DESCRIPTOR d{};
             d.Width = to_size(width, "ArrayDescriptor: width");
             d.Height = to_size(height, "ArrayDescriptor: height");
             d.Format = format_from(format);
             d.NumChannels = static_cast<unsigned>(to_size(num_channels, "num_channels"));
             return d;
           }),
           py::arg("width") = 0, py::arg("height") = 0,
           py::arg("format") = static_cast<int>(CU_AD_FORMAT_FLOAT), py::arg("num_channels") = 1,
           "A descriptor." CUPLUG_DOC_PARAMS "width : int\n    Width, in elements.\n"
           "height : int\n    Height, in rows (0 for a 1D array).\n"
           "format : array_format | int\n    Each channel's format.\n"
           "num_channels : int\n    Channels per element: 1, 2 or 4.\n");
  using desc_type = CUDA_ARRAY3D_DESCRIPTOR;
  auto desc3 = bind_descriptor<CUDA_ARRAY3D_DESCRIPTOR>(
      m, "ArrayDescriptor3D",
      "A 1D, 2D, 3D or layered CUDA array's shape, element format and array3d_flags "
      "(CUDA_ARRAY3D_DESCRIPTOR; a layered array's depth counts its layers).");
  CUPLUG_DESC_SIZE(desc3, "depth", Depth, "Depth, in slices or layers (0 for 1D and 2D).");
  desc3.def(py::init([](hint::size width, hint::size height, hint::size depth,
                        hint::array_format format, hint::size num_channels, hint::size flags) {
              CUDA_ARRAY3D_DESCRIPTOR d{};
              d.Width = to_size(width, "ArrayDescriptor3D: width");
              d.Height = to_size(height, "ArrayDescriptor3D: height");
              d.Depth = to_size(depth, "ArrayDescriptor3D: depth");
              d.Format = format_from(format);
              d.NumChannels = static_cast<unsigned>(to_size(num_channels, "num_channels"));
              d.Flags = static_cast<unsigned>(to_size(flags, "ArrayDescriptor3D: flags"));
              return d;
            }),
            py::arg("width") = 0, py::arg("height") = 0, py::arg("depth") = 0,
            py::arg("format") = static_cast<int>(CU_AD_FORMAT_FLOAT), py::arg("num_channels") = 1,
            py::arg("flags") = 0,
            "A descriptor." CUPLUG_DOC_PARAMS "width : int\n    Width, in elements.\n"
            "height : int\n    Height, in rows (0 for a 1D array).\n"
            "depth : int\n    Depth, in slices or layers (0 for 1D and 2D).\n"
            "format : array_format | int\n    Each channel's format.\n"
            "num_channels : int\n    Channels per element: 1, 2 or 4.\n"
            "flags : int\n    array3d_flags, or-ed.\n");
  desc3.def_property(
      "flags", [](const CUDA_ARRAY3D_DESCRIPTOR &d) { return d.Flags; },
      field_setter(desc3,
                   [](CUDA_ARRAY3D_DESCRIPTOR &d, hint::size v) {
                     d.Flags = static_cast<unsigned>(to_size(v, "flags"));
                   }),
      "array3d_flags, or-ed.");
}
#undef CUPLUG_DESC_SIZE

// Checks the driver would make less clear: an unknown format or channel count.
template <class Desc> const Desc &checked(const Desc &d) {
  if (channel_bytes(d.Format) == 0)
    throw py::value_error("Array: format " + format_name(d.Format) +
                          " is not an array_format with a per-channel size (UNSIGNED_INT8 ... "
                          "FLOAT); set descriptor.format");
  if (d.NumChannels != 1 && d.NumChannels != 2 && d.NumChannels != 4)
    throw py::value_error("Array: num_channels must be 1, 2 or 4, got " +
                          std::to_string(d.NumChannels));
  if (d.Width == 0)
    throw py::value_error("Array: width must be at least 1, got 0");
  return d;
}

} // namespace

void init_arrays(py::module_ &m) {
  bind_descriptors(m);
  py::class_<cuda_array, cuda_array_ptr>(m, "Array",
                                         "A CUDA array of the current context, for texture and "
                                         "surface objects; destroyed when the last reference "
                                         "(including texture objects reading it) goes.")
      .def(py::init([](const CUDA_ARRAY_DESCRIPTOR &d) {
             return std::make_shared<cuda_array>(checked(d));
           }),
           py::arg("descriptor"),
           "A 1D or 2D array (cuArrayCreate)." CUPLUG_DOC_PARAMS
           "descriptor : ArrayDescriptor\n    Its shape and element format.\n")
      .def(py::init([](const CUDA_ARRAY3D_DESCRIPTOR &d) {
             return std::make_shared<cuda_array>(checked(d));
           }),
           py::arg("descriptor"),
           "A 1D, 2D, 3D or layered array (cuArray3DCreate)." CUPLUG_DOC_PARAMS
           "descriptor : ArrayDescriptor3D\n    Its shape, element format and flags.\n")
      .def("free", &cuda_array::free, "Destroys the array now (a second call does nothing).")
      .def(
          "get_descriptor",
          [](const cuda_array &a) {
            CUDA_ARRAY_DESCRIPTOR d{};
            CUarray h = a.handle("Array.get_descriptor");
            scoped_activation_if_none active(a.get_context());
            CUPLUG_CALL(cuArrayGetDescriptor, &d, h);
            return d;
          },
          "The ArrayDescriptor (cuArrayGetDescriptor; fails for 3D and layered arrays).")
      .def(
          "get_descriptor_3d",
          [](const cuda_array &a) {
            CUDA_ARRAY3D_DESCRIPTOR d{};
            CUarray h = a.handle("Array.get_descriptor_3d");
            scoped_activation_if_none active(a.get_context());
            CUPLUG_CALL(cuArray3DGetDescriptor, &d, h);
            return d;
          },
          "The ArrayDescriptor3D (cuArray3DGetDescriptor).")
      .def_property_readonly(
          "handle",
          [](const cuda_array &a) { return reinterpret_cast<std::uintptr_t>(a.handle()); },
          "The CUarray as an int.")
      .def_property_readonly(
          "nbytes", [](const cuda_array &a) { return a.total_bytes(); },
          "Bytes of all elements (beyond PyCUDA).");

  m.def(
      "memcpy_htoa",
      [](const hint::array &ary, const hint::size &index, const hint::host_buffer &src) {
        memcpy_htoa(ary, index, src, nullptr);
      },
      py::arg("ary"), py::arg("index"), py::arg("src"),
      "Copies a contiguous host buffer into a CUDA array." CUPLUG_DOC_PARAMS
      "ary : Array\n    The destination.\n"
      "index : int\n    Byte offset into the array.\n"
      "src : collections.abc.Buffer\n    A contiguous host buffer; all its bytes are copied.\n");
  m.def(
      "memcpy_htoa_async",
      [](const hint::array &ary, const hint::size &index, const hint::host_buffer &src,
         const hint::stream &stream) {
        CUstream s = to_stream(stream);
        memcpy_htoa(ary, index, src, &s);
      },
      py::arg("ary"), py::arg("index"), py::arg("src"), py::arg("stream") = py::none(),
      "Copies a contiguous host buffer into a CUDA array, ordered on `stream`." CUPLUG_DOC_PARAMS
      "ary : Array\n    The destination.\n"
      "index : int\n    Byte offset into the array.\n"
      "src : collections.abc.Buffer\n    A contiguous (pagelocked, for overlap) host "
      "buffer.\n" CUPLUG_DOC_STREAM_PARAM);
  m.def(
      "memcpy_atoh",
      [](const hint::host_buffer &dest, const hint::array &ary, const hint::size &index) {
        memcpy_atoh(dest, ary, index, nullptr);
      },
      py::arg("dest"), py::arg("ary"), py::arg("index"),
      "Fills a writable contiguous host buffer from a CUDA array." CUPLUG_DOC_PARAMS
      "dest : collections.abc.Buffer\n    The destination; all its bytes are filled.\n"
      "ary : Array\n    The source.\n"
      "index : int\n    Byte offset into the array.\n");
  m.def(
      "memcpy_atoh_async",
      [](const hint::host_buffer &dest, const hint::array &ary, const hint::size &index,
         const hint::stream &stream) {
        CUstream s = to_stream(stream);
        memcpy_atoh(dest, ary, index, &s);
      },
      py::arg("dest"), py::arg("ary"), py::arg("index"), py::arg("stream") = py::none(),
      "Fills a writable contiguous host buffer from a CUDA array, ordered on "
      "`stream`." CUPLUG_DOC_PARAMS "dest : collections.abc.Buffer\n    The destination.\n"
      "ary : Array\n    The source.\n"
      "index : int\n    Byte offset into the array.\n" CUPLUG_DOC_STREAM_PARAM);
  m.def(
      "memcpy_dtoa",
      [](const hint::array &ary, const hint::size &index, const hint::device_ptr &src,
         const hint::size &len) { memcpy_dtoa(ary, index, src, len); },
      py::arg("ary"), py::arg("index"), py::arg("src"), py::arg("len"),
      "Copies device memory into a CUDA array." CUPLUG_DOC_PARAMS
      "ary : Array\n    The destination.\n"
      "index : int\n    Byte offset into the array.\n"
      "src : DeviceAllocation | int\n    The source.\n"
      "len : int\n    Bytes to copy.\n");
  m.def(
      "memcpy_atod",
      [](const hint::device_ptr &dest, const hint::array &ary, const hint::size &index,
         const hint::size &len) { memcpy_atod(dest, ary, index, len); },
      py::arg("dest"), py::arg("ary"), py::arg("index"), py::arg("len"),
      "Copies part of a CUDA array to device memory." CUPLUG_DOC_PARAMS
      "dest : DeviceAllocation | int\n    The destination.\n"
      "ary : Array\n    The source.\n"
      "index : int\n    Byte offset into the array.\n"
      "len : int\n    Bytes to copy.\n");
  m.def(
      "memcpy_atoa",
      [](const hint::array &dest, const hint::size &dest_index, const hint::array &src,
         const hint::size &src_index,
         const hint::size &len) { memcpy_atoa(dest, dest_index, src, src_index, len); },
      py::arg("dest"), py::arg("dest_index"), py::arg("src"), py::arg("src_index"), py::arg("len"),
      "Copies between two CUDA arrays." CUPLUG_DOC_PARAMS "dest : Array\n    The destination.\n"
      "dest_index : int\n    Byte offset into the destination.\n"
      "src : Array\n    The source.\n"
      "src_index : int\n    Byte offset into the source.\n"
      "len : int\n    Bytes to copy.\n");
}

} // namespace cuplug::python
