// Kernel argument packing: format parsing, per-code value conversion, PyCUDA's __call__ dispatch.
#include "arg_packer.hpp"
#include "memory.hpp"

#include <algorithm>
#include <complex>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace cuplug::python {
namespace {

// ---- format codes -------------------------------------------------------------------------------

struct code_info {
  char code;
  std::uint8_t size;
  std::uint8_t align;
};

// Native sizes and alignments, as CPython's struct module computes them for '@'.
constexpr code_info code_table[] = {
    {'x', 1, 1},
    {'c', 1, 1},
    {'b', 1, 1},
    {'B', 1, 1},
    {'?', sizeof(bool), alignof(bool)},
    {'h', sizeof(short), alignof(short)},
    {'H', sizeof(unsigned short), alignof(unsigned short)},
    {'e', 2, 2},
    {'i', sizeof(int), alignof(int)},
    {'I', sizeof(unsigned), alignof(unsigned)},
    {'l', sizeof(long), alignof(long)},
    {'L', sizeof(unsigned long), alignof(unsigned long)},
    {'q', sizeof(long long), alignof(long long)},
    {'Q', sizeof(unsigned long long), alignof(unsigned long long)},
    {'n', sizeof(std::ptrdiff_t), alignof(std::ptrdiff_t)},
    {'N', sizeof(std::size_t), alignof(std::size_t)},
    {'f', sizeof(float), alignof(float)},
    {'d', sizeof(double), alignof(double)},
    {'F', 2 * sizeof(float), alignof(float)},
    {'D', 2 * sizeof(double), alignof(double)},
    {'P', sizeof(void *), alignof(void *)},
};

const code_info *find_code(char c) noexcept {
  for (const code_info &e : code_table)
    if (e.code == c)
      return &e;
  return nullptr;
}

std::size_t align_up(std::size_t offset, std::size_t align) noexcept {
  return (offset + align - 1) / align * align;
}

std::string type_name(PyObject *obj) {
  PyTypeObject *t = Py_TYPE(obj);
  py::object module =
      py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(t)).attr("__module__");
  std::string name = t->tp_name;
  if (name.find('.') == std::string::npos && py::isinstance<py::str>(module)) {
    std::string m = module.cast<std::string>();
    if (m != "builtins")
      return m + "." + name;
  }
  return name;
}

std::string slot_format(char code, std::size_t size) {
  return code == 's' ? std::to_string(size) + "s" : std::string(1, code);
}

// ---- numpy scalars ------------------------------------------------------------------------------

// numpy's fixed-size scalars store their value right after the object header (arrayscalars.h:
// PyObject_HEAD then obval); reading it there avoids a Python call per argument. Every entry is
// verified against tobytes() when the table is built, so a layout change only loses speed.
struct numpy_scalar {
  PyTypeObject *type;
  char code;
  char kind; // numpy dtype kind: b i u f c
  std::uint8_t size;
  std::uint8_t align;
};

struct numpy_types {
  PyTypeObject *ndarray = nullptr;
  PyTypeObject *void_scalar = nullptr;
  PyTypeObject *generic = nullptr;
  numpy_scalar scalars[16];
  int count = 0;
  // Open-addressing table over the scalars' type pointers: lookups are a hash and one or two
  // compares, hit or miss, where a scan of all sixteen would run on every non-scalar argument.
  static constexpr std::size_t slots = 64;
  const numpy_scalar *by_type[slots] = {};

  static std::size_t slot_of(const PyTypeObject *type) noexcept {
    return (reinterpret_cast<std::uintptr_t>(type) >> 4) % slots;
  }
  void index(const numpy_scalar &s) noexcept {
    std::size_t i = slot_of(s.type);
    while (by_type[i] != nullptr)
      i = (i + 1) % slots;
    by_type[i] = &s;
  }
  const numpy_scalar *find(const PyTypeObject *type) const noexcept {
    for (std::size_t i = slot_of(type);; i = (i + 1) % slots) {
      const numpy_scalar *s = by_type[i];
      if (s == nullptr || s->type == type)
        return s;
    }
  }
};

constexpr std::size_t scalar_value_offset = sizeof(PyObject);

numpy_types *numpy_cache = nullptr;

// Built once under the GIL; the references are leaked on purpose (types live as long as numpy).
[[gnu::noinline]] const numpy_types &load_numpy() {
  auto *t = new numpy_types;
  py::module_ np = py::module_::import("numpy");
  t->ndarray = reinterpret_cast<PyTypeObject *>(py::object(np.attr("ndarray")).release().ptr());
  t->void_scalar = reinterpret_cast<PyTypeObject *>(py::object(np.attr("void")).release().ptr());
  t->generic = reinterpret_cast<PyTypeObject *>(py::object(np.attr("generic")).release().ptr());
  for (const char *c = "?bBhHiIlLqQefdFD"; *c != '\0'; ++c) {
    py::object dtype = np.attr("dtype")(std::string(1, *c));
    py::object sample = np.attr("array")(3, dtype);
    py::object scalar = sample[py::tuple()];
    std::string bytes = sample.attr("tobytes")().cast<py::bytes>();
    const auto *raw = reinterpret_cast<const char *>(scalar.ptr()) + scalar_value_offset;
    if (bytes.size() > 16 || std::memcmp(raw, bytes.data(), bytes.size()) != 0)
      continue;
    numpy_scalar &s = t->scalars[t->count++];
    s.type = Py_TYPE(scalar.ptr());
    Py_INCREF(s.type);
    s.code = *c;
    s.kind = dtype.attr("kind").cast<std::string>()[0];
    s.size = static_cast<std::uint8_t>(bytes.size());
    s.align = static_cast<std::uint8_t>(dtype.attr("alignment").cast<int>());
    t->index(s);
  }
  numpy_cache = t;
  return *t;
}

inline const numpy_types &numpy() { return numpy_cache != nullptr ? *numpy_cache : load_numpy(); }

const numpy_scalar *find_scalar(PyTypeObject *type) { return numpy().find(type); }

const unsigned char *scalar_bytes(PyObject *obj) noexcept {
  return reinterpret_cast<const unsigned char *>(obj) + scalar_value_offset;
}

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

// ---- error reporting ----------------------------------------------------------------------------

// Where a value was going, for messages: "<routine>: argument #i of kernel 'k' (format 'c')".
struct arg_context {
  const char *routine;
  const std::string &kernel;
  std::size_t index;
  char code;
  std::size_t size;

  std::string where() const {
    std::string s;
    if (routine != nullptr && *routine != '\0')
      s = std::string(routine) + ": ";
    return s + "argument #" + std::to_string(index) + " of kernel '" + kernel + "' (format '" +
           slot_format(code, size) + "')";
  }
};

[[noreturn]] void raise(PyObject *type, const std::string &message) {
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

[[noreturn]] void raise_expected(const arg_context &c, const char *expected, PyObject *got) {
  raise(PyExc_TypeError, c.where() + ": expected " + expected + ", got " + type_name(got));
}

// The pending Python error's message (str of the exception), clearing it.
std::string pending_message() {
  py::error_already_set pending;
  return py::str(pending.value()).cast<std::string>();
}

// Re-raises the pending Python error as TypeError with the argument's context prepended.
[[noreturn]] void raise_with_context(const arg_context &c) {
  raise(PyExc_TypeError, c.where() + ": " + pending_message());
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
    return alloc->ptr();
  try {
    return to_devptr(v);
  } catch (py::error_already_set &) {
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
  if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) != 0)
    raise_with_context(c);
  const std::size_t n = static_cast<std::size_t>(view.len);
  if (n <= size)
    std::memcpy(dst, view.buf, n);
  PyBuffer_Release(&view);
  if (n > size)
    raise(PyExc_TypeError,
          c.where() + ": " + std::to_string(n) + " bytes do not fit in " + std::to_string(size));
}

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

// ---- __call__ dispatch helpers ------------------------------------------------------------------

// Python classes the dispatch needs, looked up on first use (they live in modules that import
// this extension). Leaked on purpose: they outlive every call.
struct call_classes {
  PyObject *argument_handler = nullptr; // cuplug._launch.ArgumentHandler
  PyObject *managed_allocation = nullptr;
  PyObject *pointer_like = nullptr; // tuple of cuplug pointer classes that are not DeviceAllocation
};

const call_classes &classes() {
  static call_classes *c = nullptr;
  if (c != nullptr)
    return *c;
  auto *made = new call_classes;
  made->argument_handler =
      py::object(py::module_::import("cuplug._launch").attr("ArgumentHandler")).release().ptr();
  py::module_ core = py::module_::import("cuplug._core");
  made->managed_allocation = py::getattr(core, "ManagedAllocation", py::none()).release().ptr();
  py::list pointer_like;
  for (const char *name : {"PooledDeviceAllocation", "PointerHolderBase", "IPCMemoryHandle"})
    if (py::hasattr(core, name))
      pointer_like.append(core.attr(name));
  made->pointer_like = py::tuple(pointer_like).release().ptr();
  c = made;
  return *c;
}

bool is_instance(PyObject *obj, PyObject *cls) {
  const int r = PyObject_IsInstance(obj, cls);
  if (r < 0)
    throw py::error_already_set();
  return r != 0;
}

// getattr(obj, name, None) without raising AttributeError; null object when absent.
py::object attr_or_null(PyObject *obj, const char *name) {
  PyObject *value = PyObject_GetAttrString(obj, name);
  if (value == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
      throw py::error_already_set();
    PyErr_Clear();
    return py::object();
  }
  return py::reinterpret_steal<py::object>(value);
}

// One __call__ argument, classified: raw bytes to copy (numpy scalars, pointers, by-value).
struct call_arg {
  enum class kind { scalar, pointer, by_value } how = kind::scalar;
  char code = 0; // struct code of a scalar
  const unsigned char *src = nullptr;
  std::size_t size = 0;
  std::size_t align = 1;
  unsigned char scratch[16];
  bool has_view = false;
  Py_buffer view; // valid when has_view

  call_arg() = default;
  call_arg(const call_arg &) = delete;
  call_arg &operator=(const call_arg &) = delete;
  ~call_arg() {
    if (has_view)
      PyBuffer_Release(&view);
  }

  void pointer(CUdeviceptr p) {
    how = kind::pointer;
    std::memcpy(scratch, &p, sizeof p);
    src = scratch;
    size = sizeof p;
    align = alignof(void *);
  }
  void buffer(PyObject *obj, std::size_t index) {
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) != 0)
      raise(PyExc_TypeError, "cannot pass parameter #" + std::to_string(index) +
                                 " (0-based) by value: " + pending_message());
    how = kind::by_value;
    has_view = true;
    src = static_cast<const unsigned char *>(view.buf);
    size = static_cast<std::size_t>(view.len);
    align = 1;
  }
};

std::string describe(PyObject *obj, const call_arg &a) {
  switch (a.how) {
  case call_arg::kind::scalar:
    return type_name(obj) + " (format '" + a.code + "', " + std::to_string(a.size) + " bytes)";
  case call_arg::kind::by_value:
    return "a " + std::to_string(a.size) + "-byte " + type_name(obj) + " passed by value";
  default:
    return "a device pointer (" + type_name(obj) + ", " + std::to_string(a.size) + " bytes)";
  }
}

void classify(PyObject *obj, std::size_t index, call_arg &a, std::vector<py::object> &handlers,
              const std::string &kernel) {
  const numpy_types &np = numpy();
  if (const numpy_scalar *s = find_scalar(Py_TYPE(obj))) {
    a.code = s->code;
    a.src = scalar_bytes(obj);
    a.size = s->size;
    a.align = s->align;
    return;
  }
  if (device_allocation *alloc = as_device_allocation(obj))
    return a.pointer(alloc->ptr());
  if (PyObject_TypeCheck(obj, np.generic) && !PyObject_TypeCheck(obj, np.void_scalar)) {
    // A numpy scalar subclass, or a type without a kernel equivalent (longdouble, datetime).
    const std::string code = py::handle(obj).attr("dtype").attr("char").cast<std::string>();
    const code_info *info = code.size() == 1 ? find_code(code[0]) : nullptr;
    if (info == nullptr || code[0] == 'x' || code[0] == 'c' || code[0] == 'P')
      raise(PyExc_TypeError, "invalid type on parameter #" + std::to_string(index) +
                                 " (0-based): numpy type " + type_name(obj) +
                                 " has no kernel parameter equivalent");
    const arg_context c{"", kernel, index, code[0], info->size};
    pack_value(arg_slot{code[0], 0, info->size}, obj, a.scratch, c);
    a.code = code[0];
    a.src = a.scratch;
    a.size = info->size;
    a.align = info->align;
    return;
  }
  const call_classes &cls = classes();
  if (is_instance(obj, cls.argument_handler)) {
    handlers.push_back(py::reinterpret_borrow<py::object>(obj));
    py::object alloc = py::handle(obj).attr("get_device_alloc")();
    return a.pointer(to_devptr(alloc));
  }
  if (PyObject_TypeCheck(obj, np.ndarray)) {
    if (cls.managed_allocation != Py_None) {
      py::object base = py::handle(obj).attr("base");
      if (is_instance(base.ptr(), cls.managed_allocation))
        return a.pointer(as_device_allocation(base)->ptr());
    }
    return a.buffer(obj, index);
  }
  if (PyObject_TypeCheck(obj, np.void_scalar))
    return a.buffer(obj, index);
  if (py::object cai = attr_or_null(obj, "__cuda_array_interface__")) {
    const int truth = PyObject_IsTrue(cai.ptr());
    if (truth < 0)
      throw py::error_already_set();
    if (truth != 0) {
      py::object data = cai["data"];
      return a.pointer(to_devptr(py::object(data[py::int_(0)])));
    }
  }
  if (py::object gpudata = attr_or_null(obj, "gpudata"))
    return a.pointer(to_devptr(gpudata));
  if (is_instance(obj, cls.pointer_like))
    return a.pointer(to_devptr(obj));
  std::string hint;
  if (PyLong_Check(obj) || PyFloat_Check(obj) || PyComplex_Check(obj))
    hint = ": Python numbers have no C type; pass numpy.int32(x), numpy.float32(x), ... or use "
           "prepare()";
  raise(PyExc_TypeError, "invalid type on parameter #" + std::to_string(index) +
                             " (0-based): " + type_name(obj) + hint);
}

} // namespace

// ---- public entry points ------------------------------------------------------------------------

arg_layout parse_arg_format(const std::string &format) {
  arg_layout layout;
  layout.format = format;
  std::size_t offset = 0;
  std::size_t i = 0;
  if (!format.empty() && format[0] == '@')
    ++i;
  while (i < format.size()) {
    const char ch = format[i];
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      ++i;
      continue;
    }
    std::size_t count = 1;
    bool counted = false;
    if (ch >= '0' && ch <= '9') {
      count = 0;
      while (i < format.size() && format[i] >= '0' && format[i] <= '9') {
        count = count * 10 + static_cast<std::size_t>(format[i] - '0');
        if (count > (1u << 20))
          throw py::value_error("kernel argument format '" + format + "': repeat count too large");
        ++i;
      }
      counted = true;
      if (i == format.size())
        throw py::value_error("kernel argument format '" + format +
                              "': repeat count given without format code");
    }
    const char code = format[i++];
    if (code == 's') {
      layout.slots.push_back({'s', static_cast<std::uint32_t>(offset),
                              static_cast<std::uint32_t>(counted ? count : 1)});
      offset += counted ? count : 1;
      continue;
    }
    const code_info *info = find_code(code);
    if (info == nullptr) {
      std::string why =
          "bad char '" + std::string(1, code) + "' in kernel argument format '" + format + "'";
      if (code == '<' || code == '>' || code == '=' || code == '!')
        why += ": kernel parameters use native byte order and alignment only";
      throw py::value_error(why + "; accepted: b B h H i I l L q Q n N e f d F D P ? c x and "
                                  "'<n>s'");
    }
    offset = align_up(offset, info->align);
    for (std::size_t k = 0; k < count; ++k) {
      if (code != 'x')
        layout.slots.push_back({code, static_cast<std::uint32_t>(offset), info->size});
      offset += info->size;
    }
  }
  layout.bytes = offset;
  return layout;
}

void fit_to_kernel(arg_layout &layout, const param_layout &params, const std::string &kernel,
                   const char *routine) {
  if (layout.slots.size() != params.size())
    throw py::type_error(std::string(routine) + ": format '" + layout.format + "' has " +
                         std::to_string(layout.slots.size()) + " arguments, but kernel '" + kernel +
                         "' takes " + std::to_string(params.size()) + " parameters");
  std::size_t end = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    arg_slot &slot = layout.slots[i];
    if (slot.size != params[i].second)
      throw py::type_error(std::string(routine) + ": kernel '" + kernel + "' parameter #" +
                           std::to_string(i) + " is " + std::to_string(params[i].second) +
                           " bytes, but format code '" + slot_format(slot.code, slot.size) +
                           "' packs " + std::to_string(slot.size) + " bytes (format '" +
                           layout.format + "')");
    slot.offset = static_cast<std::uint32_t>(params[i].first);
    end = std::max(end, params[i].first + params[i].second);
  }
  layout.bytes = end;
}

void arg_buffer::resize(std::size_t bytes) {
  if (bytes > capacity_) {
    std::size_t capacity = std::max(bytes, capacity_ * 2);
    std::unique_ptr<unsigned char[]> grown(new unsigned char[capacity]);
    std::memcpy(grown.get(), data(), size_);
    heap_ = std::move(grown);
    capacity_ = capacity;
  }
  if (bytes > size_)
    std::memset(data() + size_, 0, bytes - size_);
  size_ = bytes;
}

void pack_prepared(const arg_layout &layout, PyObject *const *args, std::size_t nargs,
                   arg_buffer &out, const std::string &kernel, const char *routine) {
  if (nargs != layout.slots.size())
    throw py::type_error(std::string(routine) + ": kernel '" + kernel +
                         "' was prepared with format '" + layout.format + "' (" +
                         std::to_string(layout.slots.size()) + " arguments), got " +
                         std::to_string(nargs) + " arguments");
  out.assign_zero(layout.bytes);
  unsigned char *base = out.data();
  for (std::size_t i = 0; i < nargs; ++i) {
    const arg_slot &slot = layout.slots[i];
    PyObject *v = args[i];
    unsigned char *dst = base + slot.offset;
    // The common cases inline: a pointer from an int or a DeviceAllocation, an int from a
    // Python int, an exact numpy scalar of the slot's own code.
    if (slot.code == 'P') {
      if (device_allocation *alloc = as_device_allocation(v)) {
        const CUdeviceptr p = alloc->ptr();
        std::memcpy(dst, &p, sizeof p);
        continue;
      }
    } else if (slot.code == 'i' && PyLong_CheckExact(v)) {
      int overflow = 0;
      const long x = PyLong_AsLongAndOverflow(v, &overflow);
      if (overflow == 0 && x >= std::numeric_limits<int>::min() &&
          x <= std::numeric_limits<int>::max()) {
        const int y = static_cast<int>(x);
        std::memcpy(dst, &y, sizeof y);
        continue;
      }
    } else if (const numpy_scalar *s = find_scalar(Py_TYPE(v));
               s != nullptr && s->code == slot.code) {
      std::memcpy(dst, scalar_bytes(v), s->size);
      continue;
    }
    pack_value(slot, v, dst, arg_context{routine, kernel, i, slot.code, slot.size});
  }
}

void pack_call(PyObject *const *args, std::size_t nargs, const param_layout *params,
               arg_buffer &out, std::vector<py::object> &handlers, const std::string &kernel) {
  if (params != nullptr && params->size() != nargs)
    throw py::type_error("kernel '" + kernel + "' takes " + std::to_string(params->size()) +
                         " parameters, " + std::to_string(nargs) + " arguments given");
  std::size_t end = 0;
  if (params != nullptr)
    for (const auto &p : *params)
      end = std::max(end, p.first + p.second);
  out.assign_zero(end);
  std::size_t cursor = 0;
  for (std::size_t i = 0; i < nargs; ++i) {
    call_arg a;
    classify(args[i], i, a, handlers, kernel);
    std::size_t offset;
    if (params != nullptr) {
      if (a.size != (*params)[i].second)
        throw py::type_error("kernel '" + kernel + "' parameter #" + std::to_string(i) + " is " +
                             std::to_string((*params)[i].second) + " bytes, but " +
                             describe(args[i], a) + " was given");
      offset = (*params)[i].first;
    } else {
      offset = align_up(cursor, a.align);
      out.resize(offset + a.size);
    }
    if (a.size != 0)
      std::memcpy(out.data() + offset, a.src, a.size);
    cursor = offset + a.size;
  }
}

std::string numpy_format_code(py::handle obj) {
  py::module_ np = py::module_::import("numpy");
  py::object dtype;
  if (PyType_Check(obj.ptr()) &&
      PyObject_IsSubclass(obj.ptr(), reinterpret_cast<PyObject *>(numpy().generic)) == 1)
    dtype = np.attr("dtype")(obj);
  else if (py::isinstance(obj, np.attr("dtype")))
    dtype = py::reinterpret_borrow<py::object>(obj);
  else
    return {};
  const std::string c = dtype.attr("char").cast<std::string>();
  if (c == "V")
    return std::to_string(dtype.attr("itemsize").cast<std::size_t>()) + "s";
  return c;
}

} // namespace cuplug::python
