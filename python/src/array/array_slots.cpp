// The number and comparison slots of ArrayBase (+ - * / // % ** divmod & | ^ << >> ~ abs, the
// in-place forms, ==, <, ...): each calls apply() (array_ops.cpp) with its NumPy ufunc's name.
#include "array/array_object.hpp"
#include "array/array_ops.hpp"

namespace cuplug::python::array {
namespace {

// ---- the operation names and the slots --------------------------------------------------------

struct names_t {
  PyObject *add, *subtract, *multiply, *true_divide, *floor_divide, *remainder, *power,
      *bitwise_and, *bitwise_or, *bitwise_xor, *left_shift, *right_shift, *negative, *absolute,
      *invert, *equal, *not_equal, *less, *less_equal, *greater, *greater_equal;
};

const names_t &names() {
  static const names_t n = {
      PyUnicode_InternFromString("add"),          PyUnicode_InternFromString("subtract"),
      PyUnicode_InternFromString("multiply"),     PyUnicode_InternFromString("true_divide"),
      PyUnicode_InternFromString("floor_divide"), PyUnicode_InternFromString("remainder"),
      PyUnicode_InternFromString("power"),        PyUnicode_InternFromString("bitwise_and"),
      PyUnicode_InternFromString("bitwise_or"),   PyUnicode_InternFromString("bitwise_xor"),
      PyUnicode_InternFromString("left_shift"),   PyUnicode_InternFromString("right_shift"),
      PyUnicode_InternFromString("negative"),     PyUnicode_InternFromString("absolute"),
      PyUnicode_InternFromString("invert"),       PyUnicode_InternFromString("equal"),
      PyUnicode_InternFromString("not_equal"),    PyUnicode_InternFromString("less"),
      PyUnicode_InternFromString("less_equal"),   PyUnicode_InternFromString("greater"),
      PyUnicode_InternFromString("greater_equal")};
  return n;
}

PyObject *binary(PyObject *name, PyObject *a, PyObject *b) noexcept {
  try {
    PyObject *ops[2] = {a, b};
    return apply(name, ops, 2, nullptr, Py_None, true);
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

PyObject *inplace(PyObject *name, PyObject *self, PyObject *b) noexcept {
  try {
    if (!is_array(self))
      Py_RETURN_NOTIMPLEMENTED;
    PyObject *ops[2] = {self, b};
    return apply(name, ops, 2, self, Py_None, true);
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

PyObject *unary(PyObject *name, PyObject *a) noexcept {
  try {
    return apply(name, &a, 1, nullptr, Py_None, false);
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

#define CUPLUG_BINARY_SLOT(fn, field)                                                              \
  PyObject *fn(PyObject *a, PyObject *b) { return binary(names().field, a, b); }                   \
  PyObject *fn##_inplace(PyObject *a, PyObject *b) { return inplace(names().field, a, b); }

CUPLUG_BINARY_SLOT(nb_add, add)
CUPLUG_BINARY_SLOT(nb_subtract, subtract)
CUPLUG_BINARY_SLOT(nb_multiply, multiply)
CUPLUG_BINARY_SLOT(nb_true_divide, true_divide)
CUPLUG_BINARY_SLOT(nb_floor_divide, floor_divide)
CUPLUG_BINARY_SLOT(nb_remainder, remainder)
CUPLUG_BINARY_SLOT(nb_and, bitwise_and)
CUPLUG_BINARY_SLOT(nb_or, bitwise_or)
CUPLUG_BINARY_SLOT(nb_xor, bitwise_xor)
CUPLUG_BINARY_SLOT(nb_lshift, left_shift)
CUPLUG_BINARY_SLOT(nb_rshift, right_shift)
#undef CUPLUG_BINARY_SLOT

PyObject *nb_power(PyObject *a, PyObject *b, PyObject *mod) {
  if (mod != Py_None)
    Py_RETURN_NOTIMPLEMENTED;
  return binary(names().power, a, b);
}
PyObject *nb_power_inplace(PyObject *a, PyObject *b, PyObject *mod) {
  if (mod != Py_None)
    Py_RETURN_NOTIMPLEMENTED;
  return inplace(names().power, a, b);
}
PyObject *nb_divmod(PyObject *a, PyObject *b) {
  PyObject *q = binary(names().floor_divide, a, b);
  if (q == nullptr || q == Py_NotImplemented)
    return q;
  PyObject *r = binary(names().remainder, a, b);
  if (r == nullptr) {
    Py_DECREF(q);
    return nullptr;
  }
  PyObject *t = PyTuple_Pack(2, q, r);
  Py_DECREF(q);
  Py_DECREF(r);
  return t;
}
PyObject *nb_negative(PyObject *a) { return unary(names().negative, a); }
PyObject *nb_absolute(PyObject *a) { return unary(names().absolute, a); }
PyObject *nb_invert(PyObject *a) { return unary(names().invert, a); }
PyObject *nb_positive(PyObject *a) {
  // PyCUDA: +x is x itself.
  if (is_array(a) && as_array(a)->dtype == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, not_initialised_message);
    return nullptr;
  }
  Py_INCREF(a);
  return a;
}

PyObject *richcompare(PyObject *a, PyObject *b, int op) {
  const names_t &n = names();
  PyObject *name = nullptr;
  switch (op) {
  case Py_LT:
    name = n.less;
    break;
  case Py_LE:
    name = n.less_equal;
    break;
  case Py_EQ:
    name = n.equal;
    break;
  case Py_NE:
    name = n.not_equal;
    break;
  case Py_GT:
    name = n.greater;
    break;
  default:
    name = n.greater_equal;
    break;
  }
  return binary(name, a, b);
}

PyNumberMethods number_methods = {};

} // namespace

void install_number_slots(PyTypeObject *type) {
  PyNumberMethods &m = number_methods;
  m.nb_add = nb_add;
  m.nb_subtract = nb_subtract;
  m.nb_multiply = nb_multiply;
  m.nb_true_divide = nb_true_divide;
  m.nb_floor_divide = nb_floor_divide;
  m.nb_remainder = nb_remainder;
  m.nb_divmod = nb_divmod;
  m.nb_power = nb_power;
  m.nb_and = nb_and;
  m.nb_or = nb_or;
  m.nb_xor = nb_xor;
  m.nb_lshift = nb_lshift;
  m.nb_rshift = nb_rshift;
  m.nb_negative = nb_negative;
  m.nb_positive = nb_positive;
  m.nb_absolute = nb_absolute;
  m.nb_invert = nb_invert;
  m.nb_inplace_add = nb_add_inplace;
  m.nb_inplace_subtract = nb_subtract_inplace;
  m.nb_inplace_multiply = nb_multiply_inplace;
  m.nb_inplace_true_divide = nb_true_divide_inplace;
  m.nb_inplace_floor_divide = nb_floor_divide_inplace;
  m.nb_inplace_remainder = nb_remainder_inplace;
  m.nb_inplace_power = nb_power_inplace;
  m.nb_inplace_and = nb_and_inplace;
  m.nb_inplace_or = nb_or_inplace;
  m.nb_inplace_xor = nb_xor_inplace;
  m.nb_inplace_lshift = nb_lshift_inplace;
  m.nb_inplace_rshift = nb_rshift_inplace;
  type->tp_as_number = &m;
  type->tp_richcompare = richcompare;
  type->tp_hash = PyObject_HashNotImplemented;
}

} // namespace cuplug::python::array
