// The dtypes arrays compute with, as small codes (same order as cuplug._dtypes._CODES), and
// Python scalars converted to a code's bytes for kernel arguments.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace cuplug::python::array {
namespace py = pybind11;

enum type_code : int {
  t_bool,
  t_int8,
  t_uint8,
  t_int16,
  t_uint16,
  t_int32,
  t_uint32,
  t_int64,
  t_uint64,
  t_float16,
  t_float32,
  t_float64,
  t_complex64,
  t_complex128,
  type_code_count,
  t_other = -1 // a dtype arrays hold but do not compute with (vec types, structs)
};

inline constexpr std::size_t itemsize_of(int code) noexcept {
  constexpr std::size_t sizes[] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 4, 8, 8, 16};
  return code >= 0 && code < type_code_count ? sizes[code] : 0;
}

// Parameter alignment of a code in a kernel's parameter buffer (libcu++ complex is aligned to
// its full size).
inline constexpr std::size_t align_of(int code) noexcept { return itemsize_of(code); }

inline constexpr bool is_integer(int code) noexcept { return code >= t_int8 && code <= t_uint64; }
inline constexpr bool is_unsigned(int code) noexcept {
  return code == t_uint8 || code == t_uint16 || code == t_uint32 || code == t_uint64;
}
inline constexpr bool is_float(int code) noexcept { return code >= t_float16 && code <= t_float64; }
inline constexpr bool is_complex(int code) noexcept {
  return code == t_complex64 || code == t_complex128;
}

// NumPy's names ("int8", "float16", ...) for messages.
const char *name_of(int code) noexcept;

// The code of a numpy dtype object, t_other when arrays do not compute with it.
int code_of_dtype(py::handle dtype);
// The numpy dtype object of a code (borrowed from a table filled at import).
py::handle dtype_of_code(int code);
// Fills the tables (numpy dtype objects per code); called once by init_array().
void init_type_codes();

// Writes `value` converted to `code` into `out` (itemsize_of(code) bytes) as NumPy casts a
// Python scalar to that dtype: Python ints out of the dtype's range raise OverflowError
// ("Python integer 1000 out of bounds for int8"), as under NEP 50; floats to integers truncate;
// complex to a real dtype raises TypeError. NumPy scalars and 0-d arrays work through their
// Python number protocol.
void scalar_to_bytes(py::handle value, int code, void *out);

// IEEE binary16 from a double, rounding to nearest even (NumPy's npy_double_to_half).
std::uint16_t double_to_half(double value) noexcept;

} // namespace cuplug::python::array
