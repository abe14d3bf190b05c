// Operator dispatch for arrays: the number and comparison slots of ArrayBase and the generic
// apply(op, operands, out, stream) behind every elementwise function of cuplug.gpuarray.
#pragma once

#include <pybind11/pybind11.h>

namespace cuplug::python::array {
namespace py = pybind11;

// Fills ArrayBase's number slots (+ - * / // % ** divmod & | ^ << >> ~ abs, in-place forms),
// tp_richcompare and tp_hash (unhashable, as NumPy). Before PyType_Ready.
void install_number_slots(PyTypeObject *type);

// apply(name, operands, out, stream): the elementwise operation `name` (a NumPy ufunc name,
// or an operation registered by the Python layer) over arrays and scalars with NumPy's
// broadcasting and promotion. Returns the result array (or `out`), or Py_NotImplemented when an
// operand is of a type arrays do not combine with and `not_implemented` is set.
// Dispatch is cached in C++ per (operation, operand kinds and dtypes, out dtype); a miss asks
// cuplug._array.math._resolve (Python) for the kernel and result dtype.
PyObject *apply(PyObject *name, PyObject *const *operands, Py_ssize_t n, PyObject *out,
                PyObject *stream, bool not_implemented);

void init_array_ops(py::module_ &m);

// reduce_launch(...): the one-launch case of cuplug's axis reductions (reduce_launch.cpp).
void init_reduce_launch(py::module_ &m);
// Forgets the plans of reduce_fast (cuplug.tools.clear_context_caches()); with the GIL.
void clear_reduce_fast_plans() noexcept;

} // namespace cuplug::python::array
