// The sizes and byte reach of an array layout, in overflow-checked arithmetic: the one place
// where every constructor (GPUArray(...), views, operation results, imports) checks that no
// shape or stride reaches a byte outside the memory the array owns.
#pragma once

#include <Python.h>

#include <cuda.h>

#include <cstddef>

namespace cuplug::python::array {

struct array_object;

// Elements of `shape` (ndim extents, each >= 0). ValueError "array is too big; ..." (NumPy's
// words) when the element count, or count * itemsize, does not fit in Py_ssize_t. As NumPy,
// extents of 0 do not count toward the limit (an empty array is never too big).
Py_ssize_t checked_size(int ndim, const Py_ssize_t *shape, Py_ssize_t itemsize);

// The bytes an array reaches, relative to its element 0: [lo, hi) with lo <= 0 < hi, or
// [0, 0) when it has no elements. ValueError ("strides is incompatible ...") when a stride
// times an extent overflows.
struct byte_span {
  Py_ssize_t lo = 0;
  Py_ssize_t hi = 0;
};
byte_span reach(const array_object *a);

// ValueError (NumPy's "strides is incompatible with shape of requested array and size of
// buffer") unless every byte `a` reaches lies in [base, base + bytes). `what` names the buffer.
void check_within(const array_object *a, CUdeviceptr base, std::size_t bytes, const char *what);

} // namespace cuplug::python::array
