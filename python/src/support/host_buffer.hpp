// The one check for host memory cuplug reads or writes as raw bytes: it must hold plain data,
// never Python object references (object dtypes, structured dtypes with object fields).
#pragma once

#include "support/convert.hpp"

#include <pybind11/numpy.h>

#include <string>

namespace cuplug::python {

// Buffer requests add PyBUF_FORMAT so that the exporter says what its items are; without it a
// NumPy object array hands out its pointers as anonymous bytes. PyBUF_ND comes with it (the
// contiguity PyBUF_SIMPLE asks for): memoryview refuses a format without a shape.
constexpr int with_format(int flags) noexcept { return flags | PyBUF_ND | PyBUF_FORMAT; }

// Whether a PEP 3118 format string has an object item ('O'), at any depth of a structure;
// field names (":name:") are skipped, so a field called "O" is not one. Null means bytes.
inline bool format_has_objects(const char *format) noexcept {
  if (format == nullptr)
    return false;
  for (const char *p = format; *p != '\0'; ++p) {
    if (*p == ':') {
      do
        ++p;
      while (*p != '\0' && *p != ':');
      if (*p == '\0')
        return false;
    } else if (*p == 'O') {
      return true;
    }
  }
  return false;
}

// Copying the bytes of object references to the device hands the GPU pointers into this
// process, and copying bytes over them leaves the objects' reference counts wrong: the process
// crashes later, far from the cause. Refused with TypeError naming `routine` and `role`.
[[noreturn]] inline void throw_holds_objects(const char *routine, const char *role,
                                             const std::string &what) {
  throw py::type_error(std::string(routine) + ": " + role + " holds Python objects (" + what +
                       "); cuplug copies raw bytes, which would copy object pointers to the "
                       "device or overwrite them and crash later: use an array of numbers or of "
                       "a structured dtype without object fields");
}

// `view` must come from a request with with_format(); a buffer holding objects is a TypeError.
// The caller still owns `view` (and releases it) when this throws.
inline void check_plain_buffer(const Py_buffer &view, const char *routine, const char *role) {
  if (format_has_objects(view.format))
    throw_holds_objects(routine, role, std::string("buffer format '") + view.format + "'");
}

// The same for pybind11's py::buffer::request(), which asks for the format.
inline void check_plain_buffer(const py::buffer_info &info, const char *routine, const char *role) {
  if (format_has_objects(info.format.c_str()))
    throw_holds_objects(routine, role, "buffer format '" + info.format + "'");
}

// For memory cuplug allocates or registers and hands out as an array of `dtype`.
inline void check_plain_dtype(const py::dtype &dtype, const char *routine, const char *role) {
  if (dtype.attr("hasobject").cast<bool>())
    throw_holds_objects(routine, role, "dtype " + std::string(py::str(dtype)));
}

} // namespace cuplug::python
