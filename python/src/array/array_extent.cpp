// Overflow-checked element counts and byte reach of array layouts (array_extent.hpp).
#include "array/array_extent.hpp"

#include "array/array_object.hpp"

#include <pybind11/pybind11.h>

#include <string>

namespace cuplug::python::array {
namespace {

[[noreturn]] void too_big() {
  throw py::value_error("array is too big; `arr.size * arr.dtype.itemsize` is larger than the "
                        "maximum possible size.");
}

[[noreturn]] void incompatible(const char *what) {
  throw py::value_error(std::string("strides is incompatible with shape of requested array and "
                                    "size of buffer (") +
                        what + ")");
}

} // namespace

Py_ssize_t checked_size(int ndim, const Py_ssize_t *shape, Py_ssize_t itemsize) {
  Py_ssize_t count = 1;
  bool empty = false;
  for (int k = 0; k < ndim; ++k) {
    if (shape[k] == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(count, shape[k], &count))
      too_big();
  }
  Py_ssize_t bytes = 0;
  if (__builtin_mul_overflow(count, itemsize, &bytes))
    too_big();
  return empty ? 0 : count;
}

byte_span reach(const array_object *a) {
  byte_span s;
  if (a->size == 0)
    return s;
  for (int k = 0; k < a->ndim; ++k) {
    Py_ssize_t step = 0;
    if (__builtin_mul_overflow(a->shape[k] - 1, a->strides[k], &step) ||
        __builtin_add_overflow(step < 0 ? s.lo : s.hi, step, step < 0 ? &s.lo : &s.hi))
      incompatible("the strides reach beyond 2**63 bytes");
  }
  if (__builtin_add_overflow(s.hi, a->itemsize, &s.hi))
    incompatible("the strides reach beyond 2**63 bytes");
  return s;
}

void check_within(const array_object *a, CUdeviceptr base, std::size_t bytes, const char *what) {
  if (a->size == 0)
    return;
  const byte_span s = reach(a);
  // Element 0's offset into the buffer, then the first and one-past-last bytes reached; all in
  // unsigned arithmetic that cannot wrap unnoticed.
  if (a->ptr < base)
    incompatible(what);
  const unsigned long long offset = a->ptr - base;
  const unsigned long long below = static_cast<unsigned long long>(-(s.lo + 1)) + 1; // -lo
  const unsigned long long above = static_cast<unsigned long long>(s.hi);
  unsigned long long end = 0;
  if ((s.lo < 0 && below > offset) || __builtin_add_overflow(offset, above, &end) || end > bytes)
    incompatible(what);
}

} // namespace cuplug::python::array
