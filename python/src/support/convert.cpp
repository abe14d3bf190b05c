// Python objects into driver values: device pointers and streams from whatever PyCUDA accepts,
// sizes, and type names for messages.
#include "support/convert.hpp"
#include "driver/context.hpp"
#include "memory/memory.hpp"

#include <string>

namespace cuplug::python {
namespace {

// A Python int as a 64-bit address. Negative values and values past 2**64 are errors, not wraps.
CUdeviceptr int_to_address(py::handle value, const char *what) {
  unsigned long long address = PyLong_AsUnsignedLongLong(value.ptr());
  if (address == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    throw py::value_error(std::string(what) + " must be an address in [0, 2**64), got " +
                          std::string(py::repr(value)));
  }
  return static_cast<CUdeviceptr>(address);
}

// getattr that returns a null object instead of raising AttributeError.
py::object attr_or_null(py::handle obj, const char *name) {
  PyObject *value = PyObject_GetAttrString(obj.ptr(), name);
  if (value == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
      throw py::error_already_set();
    PyErr_Clear();
    return py::object();
  }
  return py::reinterpret_steal<py::object>(value);
}

} // namespace

// Order matters: __cuda_array_interface__ and .gpudata come before __index__/__int__, because
// one-element arrays (CuPy, PyTorch, NumPy) convert to their *value* through __int__/__index__.
CUdeviceptr to_devptr(py::handle obj) {
  if (PyLong_Check(obj.ptr()))
    return int_to_address(obj, "device pointer");
  if (device_allocation *alloc = as_device_allocation(obj))
    return alloc->ptr();

  if (py::object cai = attr_or_null(obj, "__cuda_array_interface__")) {
    py::object data = py::reinterpret_borrow<py::object>(cai)["data"];
    return int_to_address(py::int_(data[py::int_(0)]), "__cuda_array_interface__['data'][0]");
  }
  if (py::object gpudata = attr_or_null(obj, "gpudata")) {
    if (gpudata.is_none())
      return 0; // empty GPUArray: no memory
    return to_devptr(gpudata);
  }
  if (PyIndex_Check(obj.ptr()) && !py::isinstance<py::array>(obj)) {
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
    if (!index)
      throw py::error_already_set();
    return int_to_address(index, "device pointer");
  }
  if (!PyFloat_Check(obj.ptr()) && !py::isinstance<py::array>(obj) &&
      Py_TYPE(obj.ptr())->tp_as_number && Py_TYPE(obj.ptr())->tp_as_number->nb_int) {
    py::object value = py::reinterpret_steal<py::object>(PyNumber_Long(obj.ptr()));
    if (!value)
      throw py::error_already_set();
    return int_to_address(value, "device pointer");
  }
  throw py::type_error("cannot use an object of type '" + type_name(obj) +
                       "' as a device pointer: expected an int, a DeviceAllocation, an object "
                       "with __cuda_array_interface__ or .gpudata, or one with __index__/__int__");
}

namespace {

// cuplug's own Stream class, looked up once (its module is initialised before any call here).
PyTypeObject *stream_type() {
  static PyTypeObject *type = [] {
    py::object cls = py::module_::import("cuplug._core").attr("Stream");
    return reinterpret_cast<PyTypeObject *>(cls.release().ptr());
  }();
  return type;
}

CUstream stream_from_handle(py::handle handle) {
  if (PyLong_Check(handle.ptr()))
    return reinterpret_cast<CUstream>(int_to_address(handle, "stream handle"));
  // Numba's .handle is a ctypes c_void_p.
  if (py::object value = attr_or_null(handle, "value"))
    return value.is_none() ? nullptr
                           : reinterpret_cast<CUstream>(int_to_address(value, "stream handle"));
  return reinterpret_cast<CUstream>(
      int_to_address(py::int_(py::reinterpret_borrow<py::object>(handle)), "stream handle"));
}

} // namespace

CUstream to_stream(py::handle obj) {
  if (obj.is_none())
    return nullptr;
  if (PyLong_Check(obj.ptr()))
    return reinterpret_cast<CUstream>(int_to_address(obj, "stream handle"));
  if (PyObject_TypeCheck(obj.ptr(), stream_type()))
    return stream_from_handle(obj.attr("handle"));

  // The cuda.core / CuPy / PyTorch stream protocol: __cuda_stream__() -> (version, handle).
  if (py::object method = attr_or_null(obj, "__cuda_stream__")) {
    py::object result = method();
    if (!py::isinstance<py::tuple>(result) || py::len(result) != 2)
      throw py::type_error(type_name(obj) +
                           ".__cuda_stream__() must return (version, handle), got " +
                           std::string(py::repr(result)));
    return reinterpret_cast<CUstream>(
        int_to_address(py::int_(py::tuple(result)[1]), "__cuda_stream__ handle"));
  }
  // Other libraries' stream classes with a .handle (Numba). Events and contexts have a .handle
  // too, so the class must call itself a stream.
  if (type_name(obj).find("Stream") != std::string::npos)
    if (py::object handle = attr_or_null(obj, "handle"))
      return stream_from_handle(handle);
  throw py::type_error("cannot use an object of type '" + type_name(obj) +
                       "' as a stream: expected None, a Stream, an int handle, or an object with "
                       "__cuda_stream__");
}

std::size_t to_size(py::handle value, const char *what) {
  py::object index;
  PyObject *number = value.ptr();
  if (!PyLong_CheckExact(number)) { // the common case needs no PyNumber_Index
    if (PyFloat_Check(number) || !PyIndex_Check(number))
      throw py::type_error(std::string(what) + " must be an integer, got " + type_name(value));
    index = py::reinterpret_steal<py::object>(PyNumber_Index(number));
    if (!index)
      throw py::error_already_set();
    number = index.ptr();
  }
  const std::size_t n = PyLong_AsSize_t(number);
  if (n == static_cast<std::size_t>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    const bool negative = PyObject_RichCompareBool(number, py::int_(0).ptr(), Py_LT) == 1;
    throw py::value_error(
        std::string(what) +
        (negative ? " must not be negative, got " : " must be at most 2**64-1, got ") +
        std::string(py::str(number)));
  }
  return n;
}

std::string type_name(py::handle obj) {
  PyTypeObject *t = Py_TYPE(obj.ptr());
  py::object module =
      py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(t)).attr("__module__");
  std::string name = t->tp_name;
  const std::size_t dot = name.rfind('.');
  std::string m = dot == std::string::npos
                      ? (py::isinstance<py::str>(module) ? module.cast<std::string>() : "")
                      : name.substr(0, dot);
  if (dot != std::string::npos)
    name = name.substr(dot + 1);
  // cuplug's own classes are named as users import them (Event, not cuplug._core.Event).
  if (m.empty() || m == "builtins" || m.rfind("cuplug", 0) == 0)
    return name;
  return m + "." + name;
}

} // namespace cuplug::python
