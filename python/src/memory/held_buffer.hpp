// held_buffer: a host buffer exported through the buffer protocol for as long as it is held.
#pragma once

#include "driver/context.hpp"
#include "support/convert.hpp"
#include "support/host_buffer.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace cuplug::python {

// A Python buffer exported for as long as this object lives, so the memory cannot move or be
// freed under a copy (a bytearray cannot be resized while exported). Construction and
// destruction need the GIL; every owner of one holds it when it dies.
class held_buffer {
public:
  // flags: PyBUF_* (PyBUF_ANY_CONTIGUOUS, PyBUF_STRIDED_RO, ... | PyBUF_WRITABLE). On failure
  // raises TypeError (not a buffer, or one holding Python objects) or ValueError (wrong layout /
  // read-only) naming `routine` and `role`, chained to the exporter's own error.
  held_buffer(py::handle obj, int flags, const char *routine, const char *role) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, with_format(flags)) != 0) {
      const bool no_buffer = PyErr_ExceptionMatches(PyExc_TypeError);
      std::string want = (flags & PyBUF_WRITABLE) ? " a writable" : " a";
      if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS)
        want += " contiguous";
      const std::string type = type_name(obj);
      py::raise_from(no_buffer ? PyExc_TypeError : PyExc_ValueError,
                     (std::string(routine) + ": " + role + " must be" + want +
                      " host buffer (bytes, bytearray, numpy array, ...), got an object of type '" +
                      type + "'")
                         .c_str());
      throw py::error_already_set();
    }
    try {
      check_plain_buffer(view_, routine, role);
    } catch (...) {
      PyBuffer_Release(&view_);
      throw;
    }
  }
  ~held_buffer() { PyBuffer_Release(&view_); }
  held_buffer(const held_buffer &) = delete;
  held_buffer &operator=(const held_buffer &) = delete;

  void *data() const noexcept { return view_.buf; }
  std::size_t size() const noexcept { return static_cast<std::size_t>(view_.len); }

  // [low, high): the absolute addresses a (possibly strided) view may touch.
  std::pair<std::uintptr_t, std::uintptr_t> span() const noexcept {
    auto base = reinterpret_cast<std::uintptr_t>(view_.buf);
    if (view_.strides == nullptr || view_.ndim == 0)
      return {base, base + size()};
    std::intptr_t lo = 0, hi = 0;
    for (int i = 0; i < view_.ndim; ++i) {
      if (view_.shape[i] == 0)
        return {base, base};
      std::intptr_t reach = static_cast<std::intptr_t>(view_.shape[i] - 1) * view_.strides[i];
      (reach < 0 ? lo : hi) += reach;
    }
    return {base + lo, base + hi + view_.itemsize};
  }

private:
  Py_buffer view_{};
};

} // namespace cuplug::python
