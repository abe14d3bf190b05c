// The C type under cuplug.gpuarray.GPUArray: shape, strides, dtype and device memory, laid out
// for the operator hot path (no Python attribute lookups to read an operand).
#pragma once

#include "memory/memory.hpp"

#include <pybind11/pybind11.h>

#include <cuda.h>

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace cuplug::python::array {
namespace py = pybind11;

inline constexpr int inline_dims = 6;
// NumPy 2's limit.
inline constexpr int max_dims = 64;

// An array of `shape` (ndim entries) with `strides` in bytes over device memory at `ptr`.
// The memory is kept alive by `memory` (an allocation made for the array or handed in as
// gpudata), by `gpudata` (any other object PyCUDA accepts as a pointer), or, for views, by
// `base`. All PyObject members are strong references (or null).
struct array_object {
  PyObject_HEAD int ndim;
  int code; // type_code; t_other for dtypes arrays hold but do not compute with
  bool c_contiguous;
  bool f_contiguous;
  Py_ssize_t itemsize;
  Py_ssize_t size;
  Py_ssize_t *shape;   // ndim entries (dims_ or heap)
  Py_ssize_t *strides; // ndim entries, bytes
  CUdeviceptr ptr;     // element 0; 0 for size 0
  CUcontext ctx;       // the context the memory belongs to; null when not known
  device_allocation_ptr memory;
  PyObject *dtype;
  PyObject *gpudata; // as given, or made on first access from `memory` (null until then)
  PyObject *base;
  PyObject *allocator;
  PyObject *shape_tuple; // cached .shape
  PyObject *dict;
  PyObject *weakrefs;
  Py_ssize_t dims_[2 * inline_dims];
};

// An object made by GPUArray.__new__ whose __init__ never ran (or failed) has no dtype; every
// attribute, method and operator refuses it with this RuntimeError instead of reading it.
inline constexpr const char *not_initialised_message =
    "GPUArray was not initialised (__init__ not called)";
inline void require_ready(const array_object *a) {
  if (a->dtype == nullptr)
    throw std::runtime_error(not_initialised_message);
}

// ArrayBase's attributes (array_attributes.cpp), for its type object.
PyGetSetDef *array_getset() noexcept;

// ArrayBase, set by init_array_object().
PyTypeObject *array_type() noexcept;
// The class results are made as when no operand says otherwise (cuplug.gpuarray.GPUArray once
// the Python package registered it; ArrayBase before).
PyTypeObject *default_result_type() noexcept;

inline bool is_array(PyObject *obj) noexcept {
  return Py_TYPE(obj) == array_type() || PyObject_TypeCheck(obj, array_type());
}
inline array_object *as_array(PyObject *obj) noexcept {
  return reinterpret_cast<array_object *>(obj);
}

// A new array object of `type` without memory: shape and strides (bytes; null = C order)
// copied, flags and size computed, dtype referenced. Throws on bad input (ValueError).
py::object new_array(PyTypeObject *type, int ndim, const Py_ssize_t *shape,
                     const Py_ssize_t *strides, py::handle dtype, int code, Py_ssize_t itemsize);

// Strides of a dense array of `shape` in C or F order (NumPy's: a 0 extent counts as 1).
void dense_strides(int ndim, const Py_ssize_t *shape, Py_ssize_t itemsize, bool fortran,
                   Py_ssize_t *out) noexcept;

// Allocates memory for `a` (a.size * itemsize bytes, ordered on `stream`) through `allocator`
// (a Python callable as in PyCUDA; None = the array allocator backend).
void allocate_memory(array_object *a, py::handle allocator, CUstream stream,
                     py::handle stream_owner);

// Points `a` at memory owned by someone else: `base` (a view's parent) or `gpudata` (a pointer
// object). ctx is taken from the parent / allocation, else the current context. attach_gpudata
// refuses (ValueError) a layout reaching outside a DeviceAllocation it is given; a refusal
// changes nothing in `a`. A null pointer is accepted, as PyCUDA accepts it (reikna's temporary
// arrays come from an allocator that returns 0 and get their memory later by setting gpudata):
// such an array has no memory, and data_ptr() refuses it until it gets some.
void attach_view(array_object *a, array_object *parent, CUdeviceptr ptr);
void attach_gpudata(array_object *a, py::handle gpudata, py::handle base);

// Raises LogicError: `a`'s context was destroyed (array_memory.cpp).
[[noreturn]] void throw_context_gone(const array_object *a);
// Raises LogicError: `a` has elements but no memory (a null gpudata; array_memory.cpp).
[[noreturn]] void throw_no_memory(const array_object *a);

// The device pointer for a kernel, a copy or an export: raises LogicError if the memory was
// freed, if its context was destroyed (detached: the address may already belong to another
// context's memory), or if the array has elements but no memory yet (a null gpudata). Flag
// reads, no driver call.
inline CUdeviceptr data_ptr(const array_object *a) {
  if (a->memory) {
    if (a->memory->freed())
      device_allocation::throw_freed("GPUArray");
    if (const context_ptr &ctx = a->memory->get_context(); ctx && !ctx->valid())
      throw_context_gone(a);
  } else if (a->ptr == 0 && a->size != 0) {
    throw_no_memory(a);
  }
  return a->ptr;
}

// The current context's handle (null when there is none); cheap.
CUcontext current_context_handle();

void init_array_object(py::module_ &m);

} // namespace cuplug::python::array
