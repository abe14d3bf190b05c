// Type codes <-> numpy dtypes, and Python scalars cast to a dtype's bytes (kernel arguments).
#include "array/type_codes.hpp"

#include <complex>
#include <cstring>
#include <limits>

namespace cuplug::python::array {
namespace {

const char *const names[] = {"bool",    "int8",    "uint8",     "int16",     "uint16",
                             "int32",   "uint32",  "int64",     "uint64",    "float16",
                             "float32", "float64", "complex64", "complex128"};

// numpy dtype objects per code; leaked on purpose (they live as long as numpy).
PyObject *dtypes[type_code_count] = {};

template <class T> void put(void *out, T value) { std::memcpy(out, &value, sizeof value); }

[[noreturn]] void overflow(py::handle value, int code) {
  PyErr_Format(PyExc_OverflowError, "Python integer %S out of bounds for %s", value.ptr(),
               name_of(code));
  throw py::error_already_set();
}

template <class T> void put_integer(py::handle value, int code, void *out) {
  // Exact Python ints (and numpy integers, through __index__) are range-checked like NumPy's
  // NEP 50 conversion; other numbers (floats) truncate like a cast.
  PyObject *obj = value.ptr();
  if (!PyLong_Check(obj) && !PyBool_Check(obj)) {
    if (PyFloat_Check(obj) || !PyIndex_Check(obj)) {
      if (PyComplex_Check(obj))
        throw py::type_error(std::string("cannot cast a complex scalar to ") + name_of(code));
      const double d = PyFloat_AsDouble(obj);
      if (d == -1.0 && PyErr_Occurred())
        throw py::error_already_set();
      if constexpr (std::is_unsigned_v<T>)
        put<T>(out, d < 0 ? static_cast<T>(static_cast<long long>(d)) : static_cast<T>(d));
      else
        put<T>(out, static_cast<T>(static_cast<long long>(d)));
      return;
    }
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(obj));
    if (!index)
      throw py::error_already_set();
    return put_integer<T>(index, code, out);
  }
  int overflowed = 0;
  if constexpr (std::is_unsigned_v<T>) {
    const long long v = PyLong_AsLongLongAndOverflow(obj, &overflowed);
    if (overflowed == 0) {
      if (v == -1 && PyErr_Occurred())
        throw py::error_already_set();
      if (v < 0 || static_cast<unsigned long long>(v) > std::numeric_limits<T>::max())
        overflow(value, code);
      put<T>(out, static_cast<T>(v));
      return;
    }
    if (overflowed < 0)
      overflow(value, code);
    const unsigned long long u = PyLong_AsUnsignedLongLong(obj);
    if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      overflow(value, code);
    }
    if (u > std::numeric_limits<T>::max())
      overflow(value, code);
    put<T>(out, static_cast<T>(u));
  } else {
    const long long v = PyLong_AsLongLongAndOverflow(obj, &overflowed);
    if (overflowed != 0)
      overflow(value, code);
    if (v == -1 && PyErr_Occurred())
      throw py::error_already_set();
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
      overflow(value, code);
    put<T>(out, static_cast<T>(v));
  }
}

double as_double(py::handle value, int code) {
  PyObject *obj = value.ptr();
  if (PyFloat_CheckExact(obj))
    return PyFloat_AS_DOUBLE(obj);
  if (PyComplex_Check(obj))
    throw py::type_error(std::string("cannot cast a complex scalar to ") + name_of(code) +
                         "; take .real or use a complex array");
  const double d = PyFloat_AsDouble(obj);
  if (d == -1.0 && PyErr_Occurred())
    throw py::error_already_set();
  return d;
}

std::complex<double> as_complex(py::handle value) {
  const Py_complex c = PyComplex_AsCComplex(value.ptr());
  if (c.real == -1.0 && PyErr_Occurred())
    throw py::error_already_set();
  return {c.real, c.imag};
}

} // namespace

const char *name_of(int code) noexcept {
  return code >= 0 && code < type_code_count ? names[code] : "unsupported";
}

void init_type_codes() {
  py::module_ np = py::module_::import("numpy");
  for (int c = 0; c < type_code_count; ++c)
    dtypes[c] = np.attr("dtype")(names[c]).release().ptr();
}

py::handle dtype_of_code(int code) { return dtypes[code]; }

int code_of_dtype(py::handle dtype) {
  for (int c = 0; c < type_code_count; ++c)
    if (dtype.ptr() == dtypes[c])
      return c;
  // Equal but not identical dtype objects (metadata, a dtype made by hand).
  for (int c = 0; c < type_code_count; ++c) {
    const int eq = PyObject_RichCompareBool(dtype.ptr(), dtypes[c], Py_EQ);
    if (eq < 0)
      throw py::error_already_set();
    if (eq == 1) {
      // Native byte order only: '>f4' compares unequal to float32 already.
      return c;
    }
  }
  return t_other;
}

std::uint16_t double_to_half(double value) noexcept {
  // NumPy's npy_doublebits_to_halfbits, round to nearest even.
  std::uint64_t d;
  std::memcpy(&d, &value, sizeof d);
  const std::uint16_t h_sgn = static_cast<std::uint16_t>((d & 0x8000000000000000ULL) >> 48);
  std::uint64_t d_exp = d & 0x7ff0000000000000ULL;
  if (d_exp >= 0x40f0000000000000ULL) {
    if (d_exp == 0x7ff0000000000000ULL) {
      const std::uint64_t d_sig = d & 0x000fffffffffffffULL;
      if (d_sig != 0) {
        std::uint16_t ret = static_cast<std::uint16_t>(0x7c00u + (d_sig >> 42));
        if (ret == 0x7c00u)
          ++ret;
        return static_cast<std::uint16_t>(h_sgn + ret);
      }
    }
    return static_cast<std::uint16_t>(h_sgn + 0x7c00u);
  }
  if (d_exp <= 0x3f00000000000000ULL) {
    if (d_exp < 0x3e60000000000000ULL)
      return h_sgn;
    d_exp >>= 52;
    std::uint64_t d_sig = 0x0010000000000000ULL + (d & 0x000fffffffffffffULL);
    d_sig <<= (d_exp - 998);
    if ((d_sig & 0x003fffffffffffffULL) != 0x0010000000000000ULL)
      d_sig += 0x0010000000000000ULL;
    return static_cast<std::uint16_t>(h_sgn + static_cast<std::uint16_t>(d_sig >> 53));
  }
  const std::uint16_t h_exp = static_cast<std::uint16_t>((d_exp - 0x3f00000000000000ULL) >> 42);
  std::uint64_t d_sig = d & 0x000fffffffffffffULL;
  if ((d_sig & 0x000007ffffffffffULL) != 0x0000020000000000ULL)
    d_sig += 0x0000020000000000ULL;
  std::uint16_t h_sig = static_cast<std::uint16_t>(d_sig >> 42);
  h_sig = static_cast<std::uint16_t>(h_sig + h_exp);
  return static_cast<std::uint16_t>(h_sgn + h_sig);
}

void scalar_to_bytes(py::handle value, int code, void *out) {
  switch (code) {
  case t_bool: {
    const int truth = PyObject_IsTrue(value.ptr());
    if (truth < 0)
      throw py::error_already_set();
    put<std::uint8_t>(out, truth ? 1 : 0);
    return;
  }
  case t_int8:
    return put_integer<std::int8_t>(value, code, out);
  case t_uint8:
    return put_integer<std::uint8_t>(value, code, out);
  case t_int16:
    return put_integer<std::int16_t>(value, code, out);
  case t_uint16:
    return put_integer<std::uint16_t>(value, code, out);
  case t_int32:
    return put_integer<std::int32_t>(value, code, out);
  case t_uint32:
    return put_integer<std::uint32_t>(value, code, out);
  case t_int64:
    return put_integer<std::int64_t>(value, code, out);
  case t_uint64:
    return put_integer<std::uint64_t>(value, code, out);
  case t_float16:
    return put<std::uint16_t>(out, double_to_half(as_double(value, code)));
  case t_float32:
    return put<float>(out, static_cast<float>(as_double(value, code)));
  case t_float64:
    return put<double>(out, as_double(value, code));
  case t_complex64: {
    const std::complex<double> c = as_complex(value);
    const float parts[2] = {static_cast<float>(c.real()), static_cast<float>(c.imag())};
    std::memcpy(out, parts, sizeof parts);
    return;
  }
  case t_complex128: {
    const std::complex<double> c = as_complex(value);
    const double parts[2] = {c.real(), c.imag()};
    std::memcpy(out, parts, sizeof parts);
    return;
  }
  default:
    throw py::type_error("scalar arguments of this dtype are not supported");
  }
}

} // namespace cuplug::python::array
