// ArrayBase's read-only attributes (shape, strides, dtype, ptr, gpudata, ...). Each refuses an
// object whose __init__ never ran with the "not initialised" RuntimeError.
#include "array/array_object.hpp"

#include "support/convert.hpp"

namespace cuplug::python::array {
namespace {

PyObject *tuple_of(const Py_ssize_t *v, int n) {
  PyObject *t = PyTuple_New(n);
  if (t == nullptr)
    return nullptr;
  for (int k = 0; k < n; ++k) {
    PyObject *item = PyLong_FromSsize_t(v[k]);
    if (item == nullptr) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, k, item);
  }
  return t;
}

bool ready(const array_object *a) {
  if (a->dtype == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, not_initialised_message);
    return false;
  }
  return true;
}

PyObject *get_shape(PyObject *self, void *) {
  array_object *a = as_array(self);
  if (!ready(a))
    return nullptr;
  if (a->shape_tuple == nullptr)
    a->shape_tuple = tuple_of(a->shape, a->ndim);
  Py_XINCREF(a->shape_tuple);
  return a->shape_tuple;
}
PyObject *get_strides(PyObject *self, void *) {
  array_object *a = as_array(self);
  return ready(a) ? tuple_of(a->strides, a->ndim) : nullptr;
}
PyObject *get_dtype(PyObject *self, void *) {
  array_object *a = as_array(self);
  if (!ready(a))
    return nullptr;
  Py_INCREF(a->dtype);
  return a->dtype;
}
PyObject *get_size(PyObject *self, void *) {
  array_object *a = as_array(self);
  return ready(a) ? PyLong_FromSsize_t(a->size) : nullptr;
}
PyObject *get_nbytes(PyObject *self, void *) {
  array_object *a = as_array(self);
  return ready(a) ? PyLong_FromSsize_t(a->size * a->itemsize) : nullptr;
}
PyObject *get_itemsize(PyObject *self, void *) {
  array_object *a = as_array(self);
  return ready(a) ? PyLong_FromSsize_t(a->itemsize) : nullptr;
}
PyObject *get_ndim(PyObject *self, void *) {
  array_object *a = as_array(self);
  return ready(a) ? PyLong_FromLong(a->ndim) : nullptr;
}
PyObject *get_ptr(PyObject *self, void *) {
  array_object *a = as_array(self);
  if (!ready(a))
    return nullptr;
  try {
    return PyLong_FromUnsignedLongLong(a->size == 0 ? 0 : data_ptr(a));
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}
PyObject *get_gpudata(PyObject *self, void *) {
  array_object *a = as_array(self);
  if (!ready(a))
    return nullptr;
  if (a->gpudata == nullptr) {
    if (a->memory) {
      // An array over its own allocation shows it; a view shows its address (as PyCUDA).
      try {
        if (a->ptr == a->memory->ptr() && a->base == nullptr)
          a->gpudata = py::cast(a->memory).release().ptr();
        else
          return PyLong_FromUnsignedLongLong(a->ptr);
      } catch (...) {
        py::detail::try_translate_exceptions();
        return nullptr;
      }
    } else if (a->size != 0) {
      return PyLong_FromUnsignedLongLong(a->ptr);
    } else {
      Py_RETURN_NONE;
    }
  }
  Py_INCREF(a->gpudata);
  return a->gpudata;
}
PyObject *get_object(array_object *a, PyObject *member) {
  if (!ready(a))
    return nullptr;
  PyObject *v = member != nullptr ? member : Py_None;
  Py_INCREF(v);
  return v;
}
PyObject *get_base(PyObject *self, void *) {
  return get_object(as_array(self), as_array(self)->base);
}
PyObject *get_allocator(PyObject *self, void *) {
  return get_object(as_array(self), as_array(self)->allocator);
}
PyObject *get_c_contiguous(PyObject *self, void *) {
  array_object *a = as_array(self);
  return ready(a) ? PyBool_FromLong(a->c_contiguous) : nullptr;
}
PyObject *get_f_contiguous(PyObject *self, void *) {
  array_object *a = as_array(self);
  return ready(a) ? PyBool_FromLong(a->f_contiguous) : nullptr;
}
PyObject *get_context_handle(PyObject *self, void *) {
  array_object *a = as_array(self);
  return ready(a) ? PyLong_FromVoidPtr(a->ctx) : nullptr;
}
PyObject *get_code(PyObject *self, void *) {
  array_object *a = as_array(self);
  return ready(a) ? PyLong_FromLong(a->code) : nullptr;
}

PyGetSetDef getset[] = {
    {"shape", get_shape, nullptr, "Tuple of dimensions.", nullptr},
    {"strides", get_strides, nullptr, "Tuple of byte steps per dimension.", nullptr},
    {"dtype", get_dtype, nullptr, "numpy dtype of the elements.", nullptr},
    {"size", get_size, nullptr, "Number of elements.", nullptr},
    {"mem_size", get_size, nullptr, "Number of elements (PyCUDA's name).", nullptr},
    {"nbytes", get_nbytes, nullptr, "size * itemsize.", nullptr},
    {"itemsize", get_itemsize, nullptr, "Bytes per element.", nullptr},
    {"ndim", get_ndim, nullptr, "Number of dimensions.", nullptr},
    {"ptr", get_ptr, nullptr, "Device address of the first element (0 when empty).", nullptr},
    {"gpudata", get_gpudata, nullptr,
     "The memory: a DeviceAllocation (or what was passed as gpudata); for a view, its address "
     "as an int; None when empty.",
     nullptr},
    {"base", get_base, nullptr, "The array (or object) a view keeps alive; None otherwise.",
     nullptr},
    {"allocator", get_allocator, nullptr,
     "The allocator callable given at construction; None means the array allocator backend.",
     nullptr},
    {"_c_contiguous", get_c_contiguous, nullptr, nullptr, nullptr},
    {"_f_contiguous", get_f_contiguous, nullptr, nullptr, nullptr},
    {"_context_handle", get_context_handle, nullptr, nullptr, nullptr},
    {"_type_code", get_code, nullptr, nullptr, nullptr},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

} // namespace

PyGetSetDef *array_getset() noexcept { return getset; }

} // namespace cuplug::python::array
