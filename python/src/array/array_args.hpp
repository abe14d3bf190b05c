// GPUArray(shape, dtype, allocator, base, gpudata, strides, order)'s arguments as PyCUDA takes
// them, checked and converted for the constructor in array_object.cpp. Errors are TypeError or
// ValueError naming GPUArray and the argument.
#pragma once

#include <pybind11/pybind11.h>

#include <Python.h>

#include <cstddef>
#include <vector>

namespace cuplug::python::array {
namespace py = pybind11;

// The extents of `shape`: an int, a numpy integer, a 0-d or 1-d ndarray, a tuple or a list of
// non-negative integers, at most max_dims of them.
std::vector<Py_ssize_t> parse_shape(py::handle shape);
// `ndim` byte strides from a sequence of ints.
std::vector<Py_ssize_t> parse_strides(py::handle strides, std::size_t ndim);
// The element size of a dtype an array can hold: ValueError for 0-byte elements ('S0', 'V0',
// an empty record), which no allocation or copy can address.
Py_ssize_t checked_itemsize(const py::object &dt);
// `dtype` as a numpy.dtype (itself when it is one).
py::object to_dtype(py::handle dtype);

} // namespace cuplug::python::array
