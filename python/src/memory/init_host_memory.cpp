// Host memory as NumPy arrays: page-locked (cuMemHostAlloc), aligned, managed, and registered
// (cuMemHostRegister) arrays whose .base owns the memory.
#include "bindings.hpp"
#include "driver/context.hpp"
#include "memory/memory.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"
#include "support/host_buffer.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace cuplug::python {
namespace {

// Base of host memory owners (HostPointer). Each subclass releases its memory in its own
// destructor; free()/unregister() release early, and a second call raises LogicError.
class host_pointer {
public:
  virtual ~host_pointer() = default;
  void *data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool valid() const noexcept { return valid_; }

  // The device address of mapped host memory (DEVICEMAP / registered with DEVICEMAP).
  CUdeviceptr get_device_pointer() const {
    if (!valid_)
      throw cuda_error("host_pointer::get_device_pointer", CUDA_ERROR_INVALID_HANDLE);
    CUdeviceptr result = 0;
    CUPLUG_CALL(cuMemHostGetDevicePointer, &result, data_, 0);
    return result;
  }

protected:
  void *data_ = nullptr;
  std::size_t size_ = 0;
  bool valid_ = true;
};

class pagelocked_host_allocation : public host_pointer {
public:
  pagelocked_host_allocation(std::size_t bytes, unsigned flags)
      : ctx_(context::current_or_throw()) {
    CUPLUG_CALL(cuMemHostAlloc, &data_, bytes, flags);
    size_ = bytes;
  }
  ~pagelocked_host_allocation() override {
    if (valid_)
      release();
  }
  void free() {
    if (!valid_)
      throw cuda_error("host_allocation::free", CUDA_ERROR_INVALID_HANDLE);
    release();
    valid_ = false;
    ctx_.reset();
  }
  unsigned get_flags() const {
    if (!valid_)
      throw cuda_error("host_allocation::get_flags", CUDA_ERROR_INVALID_HANDLE);
    unsigned flags = 0;
    CUPLUG_CALL(cuMemHostGetFlags, &flags, data_);
    return flags;
  }

private:
  void release() noexcept {
    release_under(ctx_, "cuMemFreeHost",
                  [this] { return detail::entry(driver().cuMemFreeHost, "cuMemFreeHost")(data_); });
  }
  context_ptr ctx_;
};

// Plain malloc memory aligned by hand (any alignment, not only powers of two). Needs no context.
class aligned_host_allocation : public host_pointer {
public:
  aligned_host_allocation(std::size_t bytes, std::size_t alignment) {
    if (alignment == 0)
      throw py::value_error("aligned_empty: alignment must be positive");
    if (bytes > SIZE_MAX - alignment)
      throw std::bad_alloc();
    raw_ = std::malloc(bytes + alignment - 1);
    if (raw_ == nullptr)
      throw std::bad_alloc();
    auto address = reinterpret_cast<std::uintptr_t>(raw_);
    data_ = reinterpret_cast<void *>((address + alignment - 1) / alignment * alignment);
    size_ = bytes;
  }
  ~aligned_host_allocation() override { std::free(raw_); }
  void free() {
    if (!valid_)
      throw cuda_error("aligned_host_allocation::free", CUDA_ERROR_INVALID_HANDLE);
    std::free(raw_);
    raw_ = nullptr;
    valid_ = false;
  }

private:
  void *raw_ = nullptr;
};

// An existing array's memory registered with cuMemHostRegister; holds that array (.base).
class registered_host_memory : public host_pointer {
public:
  registered_host_memory(py::object base, void *data, std::size_t bytes, unsigned flags)
      : ctx_(context::current_or_throw()), base_(std::move(base)) {
    CUPLUG_CALL_NOGIL(cuMemHostRegister, data, bytes, flags);
    data_ = data;
    size_ = bytes;
  }
  ~registered_host_memory() override {
    if (valid_)
      release();
    if (interpreter_finalizing())
      base_.release(); // never touch objects while Python shuts down
  }
  void unregister() {
    if (!valid_)
      throw cuda_error("registered_host_memory::unregister", CUDA_ERROR_INVALID_HANDLE);
    release();
    valid_ = false;
    ctx_.reset();
  }
  const py::object &base() const noexcept { return base_; }

private:
  void release() noexcept {
    release_under(ctx_, "cuMemHostUnregister", [this] {
      return detail::entry(driver().cuMemHostUnregister, "cuMemHostUnregister")(data_);
    });
  }
  context_ptr ctx_;
  py::object base_;
};

// ---- shapes, orders, arrays ---------------------------------------------------------------------

enum class array_order { c, f };

array_order parse_order(py::handle order) {
  if (order.is_none())
    return array_order::c;
  if (!py::isinstance<py::str>(order))
    throw py::type_error("order must be 'C' or 'F', got an object of type '" + type_name(order) +
                         "'");
  std::string s = py::str(order);
  if (s == "C" || s == "c")
    return array_order::c;
  if (s == "F" || s == "f")
    return array_order::f;
  throw cuda_error("numpy_empty", CUDA_ERROR_INVALID_VALUE,
                   "unrecognized order specifier '" + s + "' (use 'C' or 'F')");
}

std::vector<py::ssize_t> parse_shape(py::handle shape) {
  std::vector<py::ssize_t> dims;
  auto add = [&dims](py::handle d) {
    if (PyFloat_Check(d.ptr()) || !PyIndex_Check(d.ptr()))
      throw py::type_error("shape entries must be integers, got " + std::string(py::repr(d)));
    py::ssize_t n = py::int_(py::reinterpret_borrow<py::object>(d)).cast<py::ssize_t>();
    if (n < 0)
      throw py::value_error("negative dimensions are not allowed");
    dims.push_back(n);
  };
  if (PyIndex_Check(shape.ptr()) && !py::isinstance<py::array>(shape))
    add(shape);
  else
    for (py::handle d : py::iter(shape))
      add(d);
  return dims;
}

struct array_layout {
  std::vector<py::ssize_t> shape, strides;
  std::size_t bytes = 0;
};

// `routine` names the caller in messages.
array_layout layout(py::handle shape, const py::dtype &dtype, array_order order,
                    const char *routine) {
  check_plain_dtype(dtype, routine, "the array");
  array_layout l;
  l.shape = parse_shape(shape);
  l.strides.resize(l.shape.size());
  std::size_t stride = static_cast<std::size_t>(dtype.itemsize());
  auto step = [&](std::size_t i) {
    l.strides[i] = static_cast<py::ssize_t>(stride);
    std::size_t n = static_cast<std::size_t>(l.shape[i]);
    if (n != 0 && stride > SIZE_MAX / n)
      throw py::value_error("array is too big");
    stride *= n;
  };
  if (order == array_order::c)
    for (std::size_t i = l.shape.size(); i-- > 0;)
      step(i);
  else
    for (std::size_t i = 0; i < l.shape.size(); ++i)
      step(i);
  l.bytes = stride;
  return l;
}

// An ndarray over `data` whose base is `owner` (the allocation object).
py::array wrap(const py::dtype &dtype, const array_layout &l, void *data, py::object owner) {
  return py::array(dtype, l.shape, l.strides, data, owner);
}

// Drivers refuse zero-byte host allocations; empty arrays still get a (1-byte) owner.
std::size_t at_least_one(std::size_t bytes) { return bytes == 0 ? 1 : bytes; }

py::array pagelocked_empty(py::handle shape, py::handle dtype_obj, py::handle order,
                           unsigned flags) {
  py::dtype dtype = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype_obj));
  array_layout l = layout(shape, dtype, parse_order(order), "pagelocked_empty");
  auto owner = std::make_unique<pagelocked_host_allocation>(at_least_one(l.bytes), flags);
  void *data = owner->data();
  return wrap(dtype, l, data, py::cast(std::move(owner)));
}

py::array aligned_empty(py::handle shape, py::handle dtype_obj, py::handle order,
                        std::size_t alignment) {
  py::dtype dtype = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype_obj));
  array_layout l = layout(shape, dtype, parse_order(order), "aligned_empty");
  auto owner = std::make_unique<aligned_host_allocation>(at_least_one(l.bytes), alignment);
  void *data = owner->data();
  return wrap(dtype, l, data, py::cast(std::move(owner)));
}

py::array managed_empty(py::handle shape, py::handle dtype_obj, py::handle order, unsigned flags) {
  py::dtype dtype = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype_obj));
  array_layout l = layout(shape, dtype, parse_order(order), "managed_empty");
  auto owner = managed_allocation::allocate(at_least_one(l.bytes), flags);
  void *data = reinterpret_cast<void *>(owner->ptr());
  return wrap(dtype, l, data, py::cast(owner));
}

py::array zero_filled(py::array a) {
  std::memset(a.mutable_data(), 0, static_cast<std::size_t>(a.nbytes()));
  return a;
}

// (shape, dtype, order) of an existing array for the *_like functions: C or F contiguous only.
struct like_args {
  py::object shape, dtype;
  py::str order;
};
like_args like(py::handle ary) {
  py::object flags = ary.attr("flags");
  const char *order = nullptr;
  if (flags.attr("c_contiguous").cast<bool>())
    order = "C";
  else if (flags.attr("f_contiguous").cast<bool>())
    order = "F";
  else
    throw py::value_error("could not detect array order: the array must be C- or F-contiguous");
  return {ary.attr("shape"), ary.attr("dtype"), py::str(order)};
}

py::array register_host_memory(py::handle ary_obj, unsigned flags) {
  if (!py::isinstance<py::array>(ary_obj))
    throw cuda_error("register_host_memory", CUDA_ERROR_INVALID_VALUE,
                     "ary argument is not a numpy array");
  auto ary = py::reinterpret_borrow<py::array>(ary_obj);
  const int array_flags = ary.flags();
  if (!(array_flags & (py::array::c_style | py::array::f_style)))
    throw cuda_error("register_host_memory", CUDA_ERROR_INVALID_VALUE,
                     "ary argument is not contiguous");
  if (ary.nbytes() == 0)
    throw cuda_error("register_host_memory", CUDA_ERROR_INVALID_VALUE,
                     "ary argument is empty: there is no memory to register");
  check_plain_dtype(ary.dtype(), "register_host_memory", "ary");
  void *data = const_cast<void *>(ary.data());
  auto owner =
      std::make_unique<registered_host_memory>(py::reinterpret_borrow<py::object>(ary_obj), data,
                                               static_cast<std::size_t>(ary.nbytes()), flags);

  // A fresh view whose only base is the registration (PyCUDA's array-interface round trip set
  // the base twice and fails on current NumPy, inducer/pycuda#459).
  array_layout l;
  l.shape.assign(ary.shape(), ary.shape() + ary.ndim());
  l.strides.assign(ary.strides(), ary.strides() + ary.ndim());
  py::array result = wrap(ary.dtype(), l, data, py::cast(std::move(owner)));
  if (!ary.writeable())
    result.attr("flags").attr("writeable") = false;
  return result;
}

// What the allocating functions' docstrings share: the parameters and what they return.
#define CUPLUG_DOC_SHAPE_PARAMS                                                                    \
  "shape : int | tuple[int, ...]\n    The array's shape, in elements.\n"                           \
  "dtype : numpy.typing.DTypeLike\n    Its element type.\n"                                        \
  "order : str\n    'C' (row-major) or 'F' (column-major).\n"
#define CUPLUG_DOC_LIKE_PARAMS                                                                     \
  "array : numpy.ndarray\n    A C- or F-contiguous array whose shape, dtype and order the new "    \
  "one takes.\n"

// The _zeros, _empty_like and _zeros_like companions of an allocating `<prefix>_empty`, whose
// last argument (`extra`: mem_flags or alignment, with its default) they pass on; `what` says
// where the memory is and `extra_doc` documents `extra`.
template <class Extra, py::array (*Empty)(py::handle, py::handle, py::handle, Extra)>
void def_companions(py::module_ &m, const std::string &prefix, const py::arg_v &extra,
                    const std::string &what, const std::string &extra_doc) {
  static std::vector<std::string> docs; // pybind11 keeps the pointers
  docs.push_back("A zero-filled ndarray in " + what +
                 "." CUPLUG_DOC_PARAMS CUPLUG_DOC_SHAPE_PARAMS + extra_doc);
  m.def((prefix + "_zeros").c_str(),
        [](hint::shape s, hint::dtype d, hint::order o, Extra e) {
          return zero_filled(Empty(s, d, o, e));
        },
        py::arg("shape"), py::arg("dtype"), py::arg("order") = "C", extra, docs.back().c_str());
  docs.push_back(
      "An uninitialised ndarray in " + what +
      " with the shape, dtype and order of `array`." CUPLUG_DOC_PARAMS CUPLUG_DOC_LIKE_PARAMS +
      extra_doc);
  m.def((prefix + "_empty_like").c_str(),
        [](const hint::array_like &a, Extra e) {
          like_args l = like(a);
          return Empty(l.shape, l.dtype, l.order, e);
        },
        py::arg("array"), extra, docs.back().c_str());
  docs.push_back(
      "A zero-filled ndarray in " + what +
      " with the shape, dtype and order of `array`." CUPLUG_DOC_PARAMS CUPLUG_DOC_LIKE_PARAMS +
      extra_doc);
  m.def((prefix + "_zeros_like").c_str(),
        [](const hint::array_like &a, Extra e) {
          like_args l = like(a);
          return zero_filled(Empty(l.shape, l.dtype, l.order, e));
        },
        py::arg("array"), extra, docs.back().c_str());
}

} // namespace

void init_host_memory(py::module_ &m) {
  py::class_<host_pointer>(m, "HostPointer", "Base of objects that own host memory.")
      .def("get_device_pointer", &host_pointer::get_device_pointer,
           "The memory's device address, an int (mapped memory only: host_alloc_flags.DEVICEMAP "
           "or mem_host_register_flags.DEVICEMAP).")
      .def_property_readonly("size", &host_pointer::size, "Size in bytes.");

  py::class_<pagelocked_host_allocation, host_pointer>(
      m, "PagelockedHostAllocation",
      "Page-locked host memory from cuMemHostAlloc: the .base of a pagelocked_empty() array.")
      .def("free", &pagelocked_host_allocation::free,
           "Releases the memory now; arrays over it must not be used after.")
      .def("get_flags", &pagelocked_host_allocation::get_flags,
           "The host_alloc_flags it was allocated with (cuMemHostGetFlags).");
  m.attr("HostAllocation") = m.attr("PagelockedHostAllocation");

  py::class_<aligned_host_allocation, host_pointer>(
      m, "AlignedHostAllocation",
      "Ordinary host memory aligned to a boundary: the .base of an aligned_empty() array.")
      .def("free", &aligned_host_allocation::free,
           "Releases the memory now; arrays over it must not be used after.");

  py::class_<registered_host_memory, host_pointer>(
      m, "RegisteredHostMemory",
      "An array's memory page-locked by register_host_memory() (cuMemHostRegister).")
      .def("unregister", &registered_host_memory::unregister,
           "Unlocks the memory now (cuMemHostUnregister).")
      .def_property_readonly(
          "base", [](const registered_host_memory &r) -> hint::array_like { return r.base(); },
          "The registered array.");

  const py::arg shape("shape"), dtype("dtype");
  const py::arg_v order = py::arg("order") = "C";
  const std::string mem_flags_doc = "mem_flags : int\n    host_alloc_flags, or-ed.\n";
  const std::string alignment_doc = "alignment : int\n    The boundary, in bytes.\n";
  const std::string managed_doc =
      "mem_flags : int\n    A mem_attach_flags value (0 means GLOBAL).\n";

  m.def(
      "pagelocked_empty",
      [](hint::shape s, hint::dtype d, hint::order o, unsigned f) {
        return pagelocked_empty(s, d, o, f);
      },
      shape, dtype, order, py::arg("mem_flags") = 0,
      "An uninitialised ndarray in page-locked host memory (cuMemHostAlloc): copies from and "
      "to it run at full speed and can be asynchronous." CUPLUG_DOC_PARAMS CUPLUG_DOC_SHAPE_PARAMS
      "mem_flags : int\n    host_alloc_flags, or-ed.\n");
  def_companions<unsigned, &pagelocked_empty>(m, "pagelocked", py::arg("mem_flags") = 0,
                                              "page-locked host memory", mem_flags_doc);

  m.def(
      "aligned_empty",
      [](hint::shape s, hint::dtype d, hint::order o, std::size_t a) {
        return aligned_empty(s, d, o, a);
      },
      shape, dtype, order, py::arg("alignment") = 4096,
      "An uninitialised ndarray in ordinary host memory aligned to `alignment` bytes (for "
      "register_host_memory)." CUPLUG_DOC_PARAMS CUPLUG_DOC_SHAPE_PARAMS
      "alignment : int\n    The boundary, in bytes.\n");
  def_companions<std::size_t, &aligned_empty>(m, "aligned", py::arg("alignment") = 4096,
                                              "aligned host memory", alignment_doc);

  m.def(
      "managed_empty",
      [](hint::shape s, hint::dtype d, hint::order o, unsigned f) {
        return managed_empty(s, d, o, f);
      },
      shape, dtype, order, py::arg("mem_flags") = 0,
      "An uninitialised ndarray in managed memory; its .base is a "
      "ManagedAllocation." CUPLUG_DOC_PARAMS CUPLUG_DOC_SHAPE_PARAMS
      "mem_flags : int\n    A mem_attach_flags value (0 means GLOBAL).\n");
  def_companions<unsigned, &managed_empty>(m, "managed", py::arg("mem_flags") = 0, "managed memory",
                                           managed_doc);

  m.def(
      "register_host_memory",
      [](const hint::array_like &ary, unsigned flags) { return register_host_memory(ary, flags); },
      py::arg("ary"), py::arg("flags") = 0,
      "Page-locks a contiguous array's memory (cuMemHostRegister)." CUPLUG_DOC_PARAMS
      "ary : numpy.ndarray\n    A C- or F-contiguous, non-empty array.\n"
      "flags : int\n    mem_host_register_flags, or-ed.\n" CUPLUG_DOC_RETURNS
      "numpy.ndarray\n    A new view of the memory whose .base is the RegisteredHostMemory "
      "(its .base is the original array).\n");
}

} // namespace cuplug::python
