// GPUArray's constructor arguments (shape, strides, dtype) parsed as PyCUDA takes them.
#include "array/array_args.hpp"

#include "array/array_object.hpp"
#include "support/convert.hpp"

#include <string>

namespace cuplug::python::array {
namespace {

// One extent of a shape: a non-negative integer (not a float).
Py_ssize_t to_extent(PyObject *item) {
  if (PyFloat_Check(item) || !PyIndex_Check(item))
    throw py::type_error("GPUArray: shape entries must be integers, got " +
                         type_name(py::handle(item)));
  const Py_ssize_t v = PyNumber_AsSsize_t(item, PyExc_OverflowError);
  if (v == -1 && PyErr_Occurred())
    throw py::error_already_set();
  if (v < 0)
    throw py::value_error("GPUArray: negative dimensions are not allowed, got " +
                          std::to_string(v));
  return v;
}

} // namespace

std::vector<Py_ssize_t> parse_shape(py::handle shape) {
  std::vector<Py_ssize_t> out;
  PyObject *obj = shape.ptr();
  if (PyIndex_Check(obj) && !PyObject_HasAttrString(obj, "__len__")) {
    out.push_back(to_extent(obj));
    return out;
  }
  py::object seq = py::reinterpret_steal<py::object>(
      PySequence_Fast(obj, "GPUArray: shape must be an int or a sequence of ints"));
  if (!seq) {
    // A 0-d ndarray has no length: it is one extent.
    PyErr_Clear();
    if (PyIndex_Check(obj)) {
      out.push_back(to_extent(obj));
      return out;
    }
    throw py::type_error("GPUArray: shape must be an int or a sequence of ints, got " +
                         type_name(shape));
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  if (n > max_dims)
    throw py::value_error("GPUArray: at most " + std::to_string(max_dims) +
                          " dimensions are supported, got " + std::to_string(n));
  for (Py_ssize_t k = 0; k < n; ++k)
    out.push_back(to_extent(PySequence_Fast_GET_ITEM(seq.ptr(), k)));
  return out;
}

std::vector<Py_ssize_t> parse_strides(py::handle strides, std::size_t ndim) {
  py::object seq = py::reinterpret_steal<py::object>(
      PySequence_Fast(strides.ptr(), "GPUArray: strides must be a sequence of ints"));
  if (!seq)
    throw py::error_already_set();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  if (static_cast<std::size_t>(n) != ndim)
    throw py::value_error("GPUArray: strides has " + std::to_string(n) + " entries for " +
                          std::to_string(ndim) + " dimensions");
  std::vector<Py_ssize_t> out;
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq.ptr(), k);
    const Py_ssize_t v = PyNumber_AsSsize_t(item, PyExc_OverflowError);
    if (v == -1 && PyErr_Occurred())
      throw py::error_already_set();
    out.push_back(v);
  }
  return out;
}

Py_ssize_t checked_itemsize(const py::object &dt) {
  const Py_ssize_t itemsize = dt.attr("itemsize").cast<Py_ssize_t>();
  if (itemsize <= 0)
    throw py::value_error("GPUArray: dtype " + py::repr(dt).cast<std::string>() +
                          " has elements of 0 bytes, which device memory cannot hold (give a "
                          "string or void type a length, e.g. 'S1')");
  return itemsize;
}

py::object to_dtype(py::handle dtype) {
  static PyObject *dtype_class =
      py::object(py::module_::import("numpy").attr("dtype")).release().ptr();
  if (Py_TYPE(dtype.ptr()) == reinterpret_cast<PyTypeObject *>(dtype_class) ||
      PyObject_TypeCheck(dtype.ptr(), reinterpret_cast<PyTypeObject *>(dtype_class)))
    return py::reinterpret_borrow<py::object>(dtype);
  return py::reinterpret_borrow<py::object>(dtype_class)(dtype);
}

} // namespace cuplug::python::array
