// Per-code value conversion (integers, floats, complex, pointers, buffers) for kernel arguments.
#include "launch/arg_values.hpp"
#include "array/array_object.hpp"
#include "launch/numpy_scalars.hpp"
#include "memory/memory.hpp"
#include "memory/sampler.hpp"
#include "support/host_buffer.hpp"

#include <complex>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace cuplug::python {

std::string slot_format(char code, std::size_t size) {
  return code == 's' ? std::to_string(size) + "s" : std::string(1, code);
}

CUdeviceptr allocation_pointer(const device_allocation &alloc) {
  const CUdeviceptr p = alloc.ptr(); // LogicError when freed
  if (const context_ptr &ctx = alloc.get_context(); ctx && !ctx->valid())
    throw cuda_error("DeviceAllocation", CUDA_ERROR_CONTEXT_IS_DESTROYED,
                     "the allocation's context (device " + std::to_string(ctx->device()) +
                         ") was detached and destroyed, and its memory with it");
  return p;
}

[[noreturn]] void raise(PyObject *type, const std::string &message) {
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

[[noreturn]] void raise_expected(const arg_context &c, const char *expected, PyObject *got) {
  raise(PyExc_TypeError, c.where() + ": expected " + expected + ", got " + type_name(got));
}

std::string pending_message() {
  py::error_already_set pending;
  return py::str(pending.value()).cast<std::string>();
}

[[noreturn]] void raise_with_context(const arg_context &c) {
  raise(PyExc_TypeError, c.where() + ": " + pending_message());
}

namespace {

template <class T> T load(const unsigned char *p) noexcept {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

double half_to_double(const unsigned char *p) {
#if PY_VERSION_HEX >= 0x030B0000
  return PyFloat_Unpack2(reinterpret_cast<const char *>(p), 1);
#else
  return _PyFloat_Unpack2(p, 1);
#endif
}

// ---- integers -----------------------------------------------------------------------------------

// A 64-bit integer of either sign: the value is (long long)bits when negative, bits otherwise.
struct int_value {
  bool negative;
  unsigned long long bits;

  std::string str() const {
    return negative ? std::to_string(static_cast<long long>(bits)) : std::to_string(bits);
  }
};

int_value from_pylong(PyObject *v, const arg_context &c) {
  int overflow = 0;
  long long s = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (s == -1 && PyErr_Occurred())
    throw py::error_already_set();
  if (overflow == 0)
    return {s < 0, static_cast<unsigned long long>(s)};
  if (overflow > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(v);
    if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred()))
      return {false, u};
    PyErr_Clear();
  }
  raise(PyExc_OverflowError,
        c.where() + ": " + std::string(py::repr(v)) + " does not fit in 64 bits");
}

int_value get_int(PyObject *v, const arg_context &c) {
  if (PyLong_Check(v))
    return from_pylong(v, c);
  if (const numpy_scalar *s = find_scalar(Py_TYPE(v))) {
    const unsigned char *p = scalar_bytes(v);
    if (s->kind == 'b')
      return {false, *p != 0 ? 1ull : 0ull};
    if (s->kind == 'i') {
      long long x = s->size == 1   ? load<std::int8_t>(p)
                    : s->size == 2 ? load<std::int16_t>(p)
                    : s->size == 4 ? load<std::int32_t>(p)
                                   : load<std::int64_t>(p);
      return {x < 0, static_cast<unsigned long long>(x)};
    }
    if (s->kind == 'u') {
      unsigned long long x = s->size == 1   ? load<std::uint8_t>(p)
                             : s->size == 2 ? load<std::uint16_t>(p)
                             : s->size == 4 ? load<std::uint32_t>(p)
                                            : load<std::uint64_t>(p);
      return {false, x};
    }
    raise_expected(c, "an integer", v);
  }
  if (PyIndex_Check(v)) {
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v));
    if (!index)
      raise_with_context(c);
    return from_pylong(index.ptr(), c);
  }
  raise_expected(c, "an integer", v);
}

template <class T> void store_int(unsigned char *dst, PyObject *v, const arg_context &c) {
  const int_value x = get_int(v, c);
  using limits = std::numeric_limits<T>;
  bool in_range;
  if constexpr (std::is_signed_v<T>) {
    in_range = x.negative ? static_cast<long long>(x.bits) >= static_cast<long long>(limits::min())
                          : x.bits <= static_cast<unsigned long long>(limits::max());
  } else {
    in_range = !x.negative && x.bits <= static_cast<unsigned long long>(limits::max());
  }
  if (!in_range)
    raise(PyExc_OverflowError, c.where() + ": " + x.str() + " is out of range (" +
                                   std::to_string(limits::min()) +
                                   " <= number <= " + std::to_string(limits::max()) + ")");
  const T y = static_cast<T>(x.negative ? static_cast<long long>(x.bits) : x.bits);
  std::memcpy(dst, &y, sizeof y);
}

// ---- floats and complex numbers -----------------------------------------------------------------

double get_double(PyObject *v, const arg_context &c) {
  if (PyFloat_Check(v))
    return PyFloat_AS_DOUBLE(v);
  if (const numpy_scalar *s = find_scalar(Py_TYPE(v))) {
    const unsigned char *p = scalar_bytes(v);
    if (s->kind == 'f')
      return s->size == 2 ? half_to_double(p) : s->size == 4 ? load<float>(p) : load<double>(p);
    if (s->kind == 'c')
      raise_expected(c, "a real number", v);
  }
  double x = PyFloat_AsDouble(v);
  if (x == -1.0 && PyErr_Occurred()) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      raise_expected(c, "a real number", v);
    }
    raise_with_context(c);
  }
  return x;
}

std::complex<double> get_complex(PyObject *v, const arg_context &c) {
  if (PyComplex_Check(v)) {
    Py_complex z = PyComplex_AsCComplex(v);
    return {z.real, z.imag};
  }
  if (const numpy_scalar *s = find_scalar(Py_TYPE(v))) {
    const unsigned char *p = scalar_bytes(v);
    if (s->kind == 'c')
      return s->size == 8 ? std::complex<double>(load<std::complex<float>>(p))
                          : load<std::complex<double>>(p);
  }
  Py_complex z = PyComplex_AsCComplex(v);
  if (z.real == -1.0 && PyErr_Occurred()) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      raise_expected(c, "a complex number", v);
    }
    raise_with_context(c);
  }
  return {z.real, z.imag};
}

void store_half(unsigned char *dst, double x, const arg_context &c) {
#if PY_VERSION_HEX >= 0x030B0000
  if (PyFloat_Pack2(x, reinterpret_cast<char *>(dst), 1) != 0)
    raise_with_context(c);
#else
  if (_PyFloat_Pack2(x, dst, 1) != 0)
    raise_with_context(c);
#endif
}

// ---- pointers and buffers -----------------------------------------------------------------------

CUdeviceptr get_pointer(PyObject *v, const arg_context &c) {
  if (PyLong_CheckExact(v)) {
    const int_value x = from_pylong(v, c);
    if (x.negative)
      raise(PyExc_OverflowError,
            c.where() + ": a device pointer cannot be negative, got " + x.str());
    return static_cast<CUdeviceptr>(x.bits);
  }
  if (device_allocation *alloc = as_device_allocation(v))
    return allocation_pointer(*alloc);
  // cuplug's arrays: refused when freed or of a destroyed context (flag reads).
  if (array::array_type() != nullptr && array::is_array(v)) {
    const array::array_object *arr = array::as_array(v);
    if (arr->dtype == nullptr)
      raise(PyExc_TypeError, c.where() + ": GPUArray was not initialised");
    return arr->size == 0 ? 0 : array::data_ptr(arr);
  }
  // Texture and surface objects: their handle (refused when destroyed or their memory freed).
  if (unsigned long long handle; sampler_handle(py::handle(v), &handle))
    return static_cast<CUdeviceptr>(handle);
  try {
    return to_devptr(v);
  } catch (py::error_already_set &e) {
    // cuplug's own errors (a freed allocation's LogicError) pass as they are; conversion
    // errors get the argument's context.
    if (!e.matches(PyExc_TypeError) && !e.matches(PyExc_ValueError) &&
        !e.matches(PyExc_OverflowError))
      throw;
    e.restore();
    raise_with_context(c);
  } catch (const py::builtin_exception &e) {
    raise(PyExc_TypeError, c.where() + ": " + e.what());
  }
}

// Copies a by-value buffer (bytes, bytearray, ndarray, np.void, memoryview) into `size` bytes
// at dst; shorter buffers are zero-padded (as PyCUDA's 's'), longer ones are an error.
void store_buffer(unsigned char *dst, std::size_t size, PyObject *v, const arg_context &c) {
  if (PyBytes_Check(v) || PyByteArray_Check(v)) {
    const bool is_bytes = PyBytes_Check(v);
    const std::size_t n = is_bytes ? PyBytes_GET_SIZE(v) : PyByteArray_GET_SIZE(v);
    if (n > size)
      raise(PyExc_TypeError,
            c.where() + ": " + std::to_string(n) + " bytes do not fit in " + std::to_string(size));
    std::memcpy(dst, is_bytes ? PyBytes_AS_STRING(v) : PyByteArray_AS_STRING(v), n);
    return;
  }
  if (!PyObject_CheckBuffer(v))
    raise_expected(c, "bytes or an object with the buffer protocol", v);
  Py_buffer view;
  if (PyObject_GetBuffer(v, &view, with_format(PyBUF_SIMPLE)) != 0)
    raise_with_context(c);
  if (format_has_objects(view.format)) {
    const std::string format = view.format;
    PyBuffer_Release(&view);
    throw_holds_objects(c.where().c_str(), "the value", "buffer format '" + format + "'");
  }
  const std::size_t n = static_cast<std::size_t>(view.len);
  if (n <= size)
    std::memcpy(dst, view.buf, n);
  PyBuffer_Release(&view);
  if (n > size)
    raise(PyExc_TypeError,
          c.where() + ": " + std::to_string(n) + " bytes do not fit in " + std::to_string(size));
}

} // namespace

// ---- one value per format code ------------------------------------------------------------------

void pack_value(const arg_slot &slot, PyObject *v, unsigned char *dst, const arg_context &c) {
  switch (slot.code) {
  case 'P': {
    const CUdeviceptr p = get_pointer(v, c);
    std::memcpy(dst, &p, sizeof p);
    return;
  }
  case 'i':
    return store_int<int>(dst, v, c);
  case 'I':
    return store_int<unsigned>(dst, v, c);
  case 'l':
    return store_int<long>(dst, v, c);
  case 'L':
    return store_int<unsigned long>(dst, v, c);
  case 'q':
    return store_int<long long>(dst, v, c);
  case 'Q':
    return store_int<unsigned long long>(dst, v, c);
  case 'n':
    return store_int<std::ptrdiff_t>(dst, v, c);
  case 'N':
    return store_int<std::size_t>(dst, v, c);
  case 'b':
    return store_int<signed char>(dst, v, c);
  case 'B':
    return store_int<unsigned char>(dst, v, c);
  case 'h':
    return store_int<short>(dst, v, c);
  case 'H':
    return store_int<unsigned short>(dst, v, c);
  case 'f': {
    const numpy_scalar *s = find_scalar(Py_TYPE(v));
    if (s != nullptr && s->code == 'f') {
      std::memcpy(dst, scalar_bytes(v), sizeof(float));
      return;
    }
    const float x = static_cast<float>(get_double(v, c));
    std::memcpy(dst, &x, sizeof x);
    return;
  }
  case 'd': {
    const double x = get_double(v, c);
    std::memcpy(dst, &x, sizeof x);
    return;
  }
  case 'e': {
    const numpy_scalar *s = find_scalar(Py_TYPE(v));
    if (s != nullptr && s->code == 'e') {
      std::memcpy(dst, scalar_bytes(v), 2);
      return;
    }
    return store_half(dst, get_double(v, c), c);
  }
  case 'F': {
    const std::complex<float> z(get_complex(v, c));
    std::memcpy(dst, &z, sizeof z);
    return;
  }
  case 'D': {
    const std::complex<double> z = get_complex(v, c);
    std::memcpy(dst, &z, sizeof z);
    return;
  }
  case '?': {
    const int truth = PyObject_IsTrue(v);
    if (truth < 0)
      raise_with_context(c);
    const bool b = truth != 0;
    std::memcpy(dst, &b, sizeof b);
    return;
  }
  case 'c': {
    if (PyBytes_Check(v) && PyBytes_GET_SIZE(v) == 1) {
      *dst = static_cast<unsigned char>(PyBytes_AS_STRING(v)[0]);
      return;
    }
    if (PyByteArray_Check(v) && PyByteArray_GET_SIZE(v) == 1) {
      *dst = static_cast<unsigned char>(PyByteArray_AS_STRING(v)[0]);
      return;
    }
    raise_expected(c, "bytes of length 1", v);
  }
  case 's':
    return store_buffer(dst, slot.size, v, c);
  default:
    raise(PyExc_SystemError, c.where() + ": unhandled format code");
  }
}

} // namespace cuplug::python
