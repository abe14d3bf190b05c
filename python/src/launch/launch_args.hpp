// Parsing of the launch entry points' arguments: grid/block tuples, shared sizes, keyword names.
// Inline: every launch runs these (the entry points are in function_launch.cpp).
#pragma once

#include "launch/function.hpp"

#include <string>

namespace cuplug::python {

// The Function class, set by init_launch(): self_function's fast path compares against it.
inline PyTypeObject *function_type = nullptr;

inline function &self_function(PyObject *self) {
  if (Py_TYPE(self) == function_type) {
    auto *inst = reinterpret_cast<py::detail::instance *>(self);
    if (inst->simple_layout && inst->simple_value_holder[0] != nullptr)
      return *static_cast<function *>(inst->simple_value_holder[0]);
  }
  return py::handle(self).cast<function &>();
}

// ValueError for a grid or block that is not a tuple of 1 to 3 ints in [0, 2**32).
[[noreturn]] void bad_dims(PyObject *obj, const char *what);

// A grid or block: a tuple (or list) of 1 to 3 ints; missing entries are 1.
inline dim3 parse_dims(PyObject *obj, const char *what) {
  PyObject *const *items;
  Py_ssize_t n;
  if (PyTuple_Check(obj)) {
    items = reinterpret_cast<PyTupleObject *>(obj)->ob_item;
    n = PyTuple_GET_SIZE(obj);
  } else if (PyList_Check(obj)) {
    items = reinterpret_cast<PyListObject *>(obj)->ob_item;
    n = PyList_GET_SIZE(obj);
  } else {
    bad_dims(obj, what);
  }
  if (n < 1 || n > 3)
    bad_dims(obj, what);
  unsigned v[3] = {1, 1, 1};
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *item = items[i];
    py::object index;
    if (!PyLong_Check(item)) {
      if (PyFloat_Check(item) || !PyIndex_Check(item))
        bad_dims(obj, what);
      index = py::reinterpret_steal<py::object>(PyNumber_Index(item));
      if (!index) {
        PyErr_Clear();
        bad_dims(obj, what);
      }
      item = index.ptr();
    }
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(item, &overflow);
    if (overflow != 0 || x < 0 || x > 0xffffffffLL) {
      PyErr_Clear();
      bad_dims(obj, what);
    }
    v[i] = static_cast<unsigned>(x);
  }
  return dim3{v[0], v[1], v[2]};
}

// parse_dims with the function's memo of the last tuple (see function::dims_memo).
inline dim3 memo_dims(PyObject *obj, function::dims_memo &memo, const char *what) {
  if (obj == memo.key.ptr())
    return memo.value;
  const dim3 value = parse_dims(obj, what);
  if (PyTuple_CheckExact(obj)) {
    bool exact = true;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(obj); ++i)
      exact = exact && PyLong_CheckExact(PyTuple_GET_ITEM(obj, i));
    if (exact) {
      memo.key = py::reinterpret_borrow<py::object>(obj);
      memo.value = value;
    }
  }
  return value;
}

inline bool truthy(PyObject *obj) {
  const int truth = PyObject_IsTrue(obj);
  if (truth < 0)
    throw py::error_already_set();
  return truth != 0;
}

inline bool is_block(PyObject *obj) noexcept { return PyTuple_Check(obj) || PyList_Check(obj); }

inline unsigned shared_bytes(PyObject *obj, const char *what) {
  if (obj == Py_None)
    return 0;
  int overflow = 0;
  const long long x = PyLong_Check(obj) ? PyLong_AsLongLongAndOverflow(obj, &overflow) : -1;
  if (overflow != 0 || x < 0 || x > 0xffffffffLL) {
    PyErr_Clear();
    throw py::value_error(std::string(what) + " must be a number of bytes in [0, 2**32), got " +
                          std::string(py::repr(obj)));
  }
  return static_cast<unsigned>(x);
}

inline bool name_is(PyObject *name, PyObject *interned, const char *text) {
  return name == interned || PyUnicode_CompareWithASCIIString(name, text) == 0;
}

// "a, b": the keyword names of a vectorcall, for messages.
std::string joined_names(PyObject *kwnames);

// DeprecationWarning for the old signatures that pass no block (PyCUDA 2011.1).
void deprecated_signature(const char *routine);

struct interned_names {
  PyObject *shared_size, *block, *grid, *stream, *shared, *texrefs, *time_kernel, *pre_call,
      *post_call, *cluster, *cooperative, *config;
};

inline const interned_names &names() {
  static const interned_names n = {
      PyUnicode_InternFromString("shared_size"), PyUnicode_InternFromString("block"),
      PyUnicode_InternFromString("grid"),        PyUnicode_InternFromString("stream"),
      PyUnicode_InternFromString("shared"),      PyUnicode_InternFromString("texrefs"),
      PyUnicode_InternFromString("time_kernel"), PyUnicode_InternFromString("pre_call"),
      PyUnicode_InternFromString("post_call"),   PyUnicode_InternFromString("cluster"),
      PyUnicode_InternFromString("cooperative"), PyUnicode_InternFromString("config")};
  return n;
}

// The deprecated signatures pass no block: use the shape of the previous launch (PyCUDA's
// cuFuncSetBlockShape state).
dim3 remembered_block(const function &f);

} // namespace cuplug::python
