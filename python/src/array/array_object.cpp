// ArrayBase: GPUArray's C layout, PyCUDA's constructor and views (the attributes are in
// array_attributes.cpp, the constructor's argument parsing in array_args.cpp).
#include "array/array_object.hpp"

#include "array/array_args.hpp"
#include "array/array_extent.hpp"
#include "array/array_memory.hpp"
#include "array/array_ops.hpp"
#include "array/type_codes.hpp"
#include "hooks.hpp"
#include "support/convert.hpp"

#include <cstring>
#include <new>
#include <string>

namespace cuplug::python::array {
namespace {

PyTypeObject *the_type = nullptr;

[[noreturn]] void raise_already_set() { throw py::error_already_set(); }

// Throws ValueError for a shape whose element or byte count does not fit (array_extent.hpp).
void compute_flags(array_object *a) {
  a->size = checked_size(a->ndim, a->shape, a->itemsize);
  // NumPy's rules: extents of 1 do not matter, empty arrays are contiguous both ways.
  bool c = true, f = true;
  if (a->size != 0) {
    Py_ssize_t expect = a->itemsize;
    for (int k = a->ndim - 1; k >= 0; --k) {
      if (a->shape[k] != 1) {
        if (a->strides[k] != expect)
          c = false;
        expect *= a->shape[k];
      }
    }
    expect = a->itemsize;
    for (int k = 0; k < a->ndim; ++k) {
      if (a->shape[k] != 1) {
        if (a->strides[k] != expect)
          f = false;
        expect *= a->shape[k];
      }
    }
  }
  a->c_contiguous = c;
  a->f_contiguous = f;
}

PyObject *tp_new(PyTypeObject *type, PyObject *, PyObject *) {
  PyObject *self = type->tp_alloc(type, 0);
  if (self == nullptr)
    return nullptr;
  array_object *a = as_array(self);
  new (&a->memory) device_allocation_ptr();
  a->shape = a->dims_;
  a->strides = a->dims_ + inline_dims;
  a->code = t_other;
  a->size = 0;
  return self;
}

int tp_traverse(PyObject *self, visitproc visit, void *arg) {
  array_object *a = as_array(self);
  Py_VISIT(a->dtype);
  Py_VISIT(a->gpudata);
  Py_VISIT(a->base);
  Py_VISIT(a->allocator);
  Py_VISIT(a->shape_tuple);
  Py_VISIT(a->dict);
  return 0;
}

int tp_clear(PyObject *self) {
  array_object *a = as_array(self);
  Py_CLEAR(a->dtype);
  Py_CLEAR(a->gpudata);
  Py_CLEAR(a->base);
  Py_CLEAR(a->allocator);
  Py_CLEAR(a->shape_tuple);
  Py_CLEAR(a->dict);
  return 0;
}

void tp_dealloc(PyObject *self) {
  array_object *a = as_array(self);
  PyTypeObject *type = Py_TYPE(self);
  // Python subclasses' subtype_dealloc drops the reference to their (heap) type after this.
  PyObject_GC_UnTrack(self);
  if (a->weakrefs != nullptr)
    PyObject_ClearWeakRefs(self);
  tp_clear(self);
  // The allocation's destructor gives the memory back to its allocator (stream-ordered).
  a->memory.~device_allocation_ptr();
  if (a->shape != a->dims_)
    PyMem_Free(a->shape);
  type->tp_free(self);
}

// ---- the constructor ----------------------------------------------------------------------------

// Back to the state tp_new made: no dtype (not initialised), no shape, no memory.
void reset(array_object *a) noexcept {
  Py_CLEAR(a->dtype);
  Py_CLEAR(a->gpudata);
  Py_CLEAR(a->base);
  Py_CLEAR(a->allocator);
  Py_CLEAR(a->shape_tuple);
  a->memory.reset();
  if (a->shape != a->dims_)
    PyMem_Free(a->shape);
  a->shape = a->dims_;
  a->strides = a->dims_ + inline_dims;
  a->ndim = 0;
  a->size = 0;
  a->itemsize = 0;
  a->code = t_other;
  a->ptr = 0;
  a->ctx = nullptr;
}

int tp_init(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *kwlist[] = {"shape",   "dtype",   "allocator", "base",
                                 "gpudata", "strides", "order",     nullptr};
  PyObject *shape = nullptr, *dtype = nullptr, *allocator = Py_None, *base = Py_None,
           *gpudata = Py_None, *strides = Py_None, *order = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OOOOO:GPUArray", const_cast<char **>(kwlist),
                                   &shape, &dtype, &allocator, &base, &gpudata, &strides, &order))
    return -1;
  try {
    array_object *a = as_array(self);
    if (a->dtype != nullptr) {
      PyErr_SetString(PyExc_TypeError, "GPUArray.__init__ called twice");
      return -1; // the first initialisation stays as it was
    }
    std::vector<Py_ssize_t> dims = parse_shape(shape);
    py::object dt = to_dtype(dtype);
    // NumPy's rule for a subarray dtype (base, inner shape): elements of `base`, with the inner
    // shape appended to the array's (dense, after any strides given for the outer axes).
    // Only dtypes without a type code can be one (the numeric types are looked up once).
    std::vector<Py_ssize_t> inner;
    int code = code_of_dtype(dt);
    if (code == t_other) {
      py::object sub = dt.attr("subdtype");
      if (!sub.is_none()) {
        inner = parse_shape(py::reinterpret_borrow<py::tuple>(sub)[1]);
        dt = to_dtype(py::reinterpret_borrow<py::tuple>(sub)[0]);
        code = code_of_dtype(dt);
      }
    }
    const Py_ssize_t itemsize = checked_itemsize(dt);
    const std::size_t outer = dims.size();
    dims.insert(dims.end(), inner.begin(), inner.end());
    if (dims.size() > static_cast<std::size_t>(max_dims))
      throw py::value_error("GPUArray: at most " + std::to_string(max_dims) +
                            " dimensions are supported, got " + std::to_string(dims.size()));
    checked_size(static_cast<int>(dims.size()), dims.data(), itemsize); // before any product
    bool fortran = false;
    if (order != nullptr && order != Py_None) {
      std::string o = py::str(order);
      if (o == "F")
        fortran = true;
      else if (o != "C")
        throw py::value_error("GPUArray: order must be 'C' or 'F', got '" + o + "'");
    }
    std::vector<Py_ssize_t> st(dims.size());
    if (strides != Py_None) {
      st = parse_strides(strides, outer);
      st.resize(dims.size());
      dense_strides(static_cast<int>(inner.size()), inner.data(), itemsize, false,
                    st.data() + outer);
    } else {
      dense_strides(static_cast<int>(dims.size()), dims.data(), itemsize, fortran, st.data());
    }
    // Fill in place (tp_new made an empty object).
    const int ndim = static_cast<int>(dims.size());
    if (ndim > inline_dims) {
      a->shape = static_cast<Py_ssize_t *>(PyMem_Malloc(sizeof(Py_ssize_t) * 2 * ndim));
      if (a->shape == nullptr)
        throw std::bad_alloc();
      a->strides = a->shape + ndim;
    }
    a->ndim = ndim;
    std::copy(dims.begin(), dims.end(), a->shape);
    std::copy(st.begin(), st.end(), a->strides);
    a->itemsize = itemsize;
    a->code = code;
    a->dtype = dt.release().ptr();
    compute_flags(a);
    if (allocator != Py_None) {
      Py_INCREF(allocator);
      a->allocator = allocator;
    }
    if (gpudata != Py_None) {
      attach_gpudata(a, gpudata, base);
    } else {
      // Its own allocation holds size * itemsize bytes: given strides must stay inside.
      if (strides != Py_None)
        check_within(a, 0, static_cast<std::size_t>(a->size) * a->itemsize,
                     "the array's own allocation of size * itemsize bytes");
      if (base != Py_None) {
        Py_INCREF(base);
        a->base = base;
      }
      if (a->size != 0)
        allocate_memory(a, allocator, nullptr, py::none());
      else
        a->ctx = current_context_handle();
    }
    return 0;
  } catch (...) {
    // A refused __init__ leaves the object as __new__ made it (it reads as not initialised),
    // never half-made with a shape but no memory.
    reset(as_array(self));
    py::detail::try_translate_exceptions();
    return -1;
  }
}

// A view stays inside its parent's allocation when the parent has one (the bytes it may
// address), else inside the bytes the parent itself reaches (memory of unknown size).
void check_view(const array_object *view, const array_object *parent) {
  if (view->size == 0)
    return;
  if (!parent->memory && parent->ptr == 0)
    throw_no_memory(parent); // an offset from a null pointer would look like memory
  if (parent->memory && !parent->memory->freed()) {
    check_within(view, parent->memory->ptr(), parent->memory->size(), "the viewed allocation");
    return;
  }
  if (parent->size == 0)
    throw py::value_error("a view with elements of an empty array");
  const byte_span s = reach(parent);
  check_within(view, parent->ptr + static_cast<CUdeviceptr>(s.lo),
               static_cast<std::size_t>(s.hi - s.lo), "the bytes of the viewed array");
}

// _view(shape, strides, offset_bytes, dtype=None): a view of self's memory, base = self.
PyObject *method_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  try {
    if (nargs < 3 || nargs > 4)
      throw py::type_error("_view(shape, strides, offset, dtype=None)");
    array_object *a = as_array(self);
    require_ready(a);
    std::vector<Py_ssize_t> dims = parse_shape(args[0]);
    std::vector<Py_ssize_t> st = parse_strides(args[1], dims.size());
    const Py_ssize_t offset = PyNumber_AsSsize_t(args[2], PyExc_OverflowError);
    if (offset == -1 && PyErr_Occurred())
      raise_already_set();
    // The parent's dtype was checked when it was made; a new one is checked here.
    py::object dt = py::reinterpret_borrow<py::object>(a->dtype);
    int code = a->code;
    Py_ssize_t itemsize = a->itemsize;
    if (nargs == 4 && args[3] != Py_None) {
      dt = to_dtype(args[3]);
      code = code_of_dtype(dt);
      if (code == t_other && !dt.attr("subdtype").is_none())
        throw py::value_error("GPUArray: a view cannot take the subarray dtype " +
                              py::repr(dt).cast<std::string>() +
                              "; view as its base dtype and reshape instead");
      itemsize = checked_itemsize(dt);
    }
    py::object v = new_array(Py_TYPE(self), static_cast<int>(dims.size()), dims.data(), st.data(),
                             dt, code, itemsize);
    array_object *va = as_array(v.ptr());
    va->ptr = va->size == 0 ? 0 : a->ptr + static_cast<CUdeviceptr>(offset);
    check_view(va, a);
    attach_view(va, a, va->ptr);
    return v.release().ptr();
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

// _set_gpudata(gpudata): the array moves onto other memory (a subclass setting PyCUDA's plain
// gpudata attribute: cuplug._array.core._shadowing). Layout and base stay.
PyObject *method_set_gpudata(PyObject *self, PyObject *gpudata) {
  try {
    array_object *a = as_array(self);
    require_ready(a);
    if (gpudata == Py_None) {
      if (a->size != 0)
        throw py::value_error("gpudata=None is only for an empty array; this one has " +
                              std::to_string(a->size) + " elements");
      Py_CLEAR(a->gpudata);
      a->memory.reset();
      a->ptr = 0;
      Py_RETURN_NONE;
    }
    const CUdeviceptr ptr = to_devptr(gpudata); // TypeError before anything changes
    (void)ptr;
    // The old memory goes only once the new one is accepted: a refusal (too small for the
    // layout, a null pointer) leaves the array on the memory it had.
    PyObject *old = a->gpudata;
    device_allocation_ptr old_memory = std::move(a->memory);
    const CUdeviceptr old_ptr = a->ptr;
    const CUcontext old_ctx = a->ctx;
    a->gpudata = nullptr;
    try {
      attach_gpudata(a, gpudata, py::none());
    } catch (...) {
      a->gpudata = old;
      a->memory = std::move(old_memory);
      a->ptr = old_ptr;
      a->ctx = old_ctx;
      throw;
    }
    Py_XDECREF(old);
    Py_RETURN_NONE;
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

PyMethodDef methods[] = {
    {"_view", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&method_view)),
     METH_FASTCALL, "_view(shape, strides, offset_bytes, dtype=None): a view with base=self."},
    {"_set_gpudata", &method_set_gpudata, METH_O,
     "_set_gpudata(gpudata): the array over other memory (same layout)."},
    {nullptr, nullptr, 0, nullptr}};

} // namespace

PyTypeObject *array_type() noexcept { return the_type; }
// The result_type hook (GPUArray, registered by cuplug._array.core); ArrayBase before that.
PyTypeObject *default_result_type() noexcept {
  py::handle registered = hooks::get(hooks::hook::result_type);
  return registered ? reinterpret_cast<PyTypeObject *>(registered.ptr()) : the_type;
}

void dense_strides(int ndim, const Py_ssize_t *shape, Py_ssize_t itemsize, bool fortran,
                   Py_ssize_t *out) noexcept {
  Py_ssize_t s = itemsize;
  if (fortran) {
    for (int k = 0; k < ndim; ++k) {
      out[k] = s;
      s *= shape[k] != 0 ? shape[k] : 1;
    }
  } else {
    for (int k = ndim - 1; k >= 0; --k) {
      out[k] = s;
      s *= shape[k] != 0 ? shape[k] : 1;
    }
  }
}

py::object new_array(PyTypeObject *type, int ndim, const Py_ssize_t *shape,
                     const Py_ssize_t *strides, py::handle dtype, int code, Py_ssize_t itemsize) {
  if (ndim > max_dims)
    throw py::value_error("GPUArray: at most " + std::to_string(max_dims) + " dimensions");
  py::object obj = py::reinterpret_steal<py::object>(tp_new(type, nullptr, nullptr));
  if (!obj)
    raise_already_set();
  array_object *a = as_array(obj.ptr());
  if (ndim > inline_dims) {
    a->shape = static_cast<Py_ssize_t *>(PyMem_Malloc(sizeof(Py_ssize_t) * 2 * ndim));
    if (a->shape == nullptr)
      throw std::bad_alloc();
    a->strides = a->shape + ndim;
  }
  a->ndim = ndim;
  if (ndim > 0)
    std::memcpy(a->shape, shape, sizeof(Py_ssize_t) * ndim);
  a->itemsize = itemsize;
  if (strides != nullptr) {
    if (ndim > 0)
      std::memcpy(a->strides, strides, sizeof(Py_ssize_t) * ndim);
  } else {
    dense_strides(ndim, shape, itemsize, false, a->strides);
  }
  a->code = code;
  Py_INCREF(dtype.ptr());
  a->dtype = dtype.ptr();
  compute_flags(a);
  return obj;
}

void attach_view(array_object *a, array_object *parent, CUdeviceptr ptr) {
  a->ptr = ptr;
  a->ctx = parent->ctx;
  a->memory = parent->memory;
  Py_INCREF(parent);
  a->base = reinterpret_cast<PyObject *>(parent);
  if (parent->allocator != nullptr) {
    Py_INCREF(parent->allocator);
    a->allocator = parent->allocator;
  }
}

void attach_gpudata(array_object *a, py::handle gpudata, py::handle base) {
  if (device_allocation *alloc = as_device_allocation(gpudata)) {
    const CUdeviceptr before = a->ptr;
    a->ptr = alloc->ptr();
    try {
      check_within(a, a->ptr, alloc->size(), "the given gpudata allocation");
    } catch (...) {
      a->ptr = before; // a refusal leaves `a` as it was
      throw;
    }
    a->memory = gpudata.cast<device_allocation_ptr>();
    a->ctx = alloc->get_context() ? alloc->get_context()->handle() : nullptr;
  } else {
    a->ptr = to_devptr(gpudata); // 0 allowed: no memory yet (data_ptr refuses it)
    a->ctx = current_context_handle();
  }
  Py_INCREF(gpudata.ptr());
  a->gpudata = gpudata.ptr();
  if (!base.is_none()) {
    Py_INCREF(base.ptr());
    a->base = base.ptr();
  }
}

CUcontext current_context_handle() {
  // Without a driver (CI) arrays over given pointers still work for layout questions.
  try {
    context_ptr ctx = context::current();
    return ctx ? ctx->handle() : nullptr;
  } catch (const std::exception &) {
    return nullptr;
  }
}

void init_array_object(py::module_ &m) {
  static PyTypeObject type = {PyVarObject_HEAD_INIT(nullptr, 0)};
  type.tp_name = "cuplug._core._array.ArrayBase";
  type.tp_basicsize = sizeof(array_object);
  type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC;
  type.tp_doc = "The C layout under GPUArray: shape, strides, dtype, device memory.";
  type.tp_new = &tp_new;
  type.tp_init = &tp_init;
  type.tp_dealloc = &tp_dealloc;
  type.tp_traverse = &tp_traverse;
  type.tp_clear = &tp_clear;
  type.tp_getset = array_getset();
  type.tp_methods = methods;
  type.tp_dictoffset = offsetof(array_object, dict);
  type.tp_weaklistoffset = offsetof(array_object, weakrefs);
  type.tp_alloc = PyType_GenericAlloc;
  type.tp_free = PyObject_GC_Del;
  install_number_slots(&type);
  if (PyType_Ready(&type) < 0)
    raise_already_set();
  the_type = &type;
  Py_INCREF(&type);
  m.add_object("ArrayBase", py::handle(reinterpret_cast<PyObject *>(&type)));
  // The routines below the class (cuplug._kernels, cuplug._array's routines) make their results
  // of this class without importing it back (the class imports them: one direction).
  m.def(
      "result_type",
      []() {
        return py::reinterpret_borrow<py::object>(
            reinterpret_cast<PyObject *>(default_result_type()));
      },
      "The class made for results when no operand's class says otherwise (the result_type "
      "hook's, else ArrayBase).");
}

} // namespace cuplug::python::array
