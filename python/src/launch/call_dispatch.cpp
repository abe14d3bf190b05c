// Function.__call__'s argument packing: PyCUDA's per-argument type dispatch (spec §1.11).
#include "array/array_object.hpp"
#include "array/same_device.hpp"
#include "hooks.hpp"
#include "launch/arg_packer.hpp"
#include "launch/arg_values.hpp"
#include "launch/numpy_scalars.hpp"
#include "memory/memory.hpp"
#include "memory/sampler.hpp"
#include "support/convert.hpp"
#include "support/host_buffer.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace cuplug::python {
namespace {

// ---- __call__ dispatch helpers ------------------------------------------------------------------

// Classes of this extension the dispatch needs, looked up on first use. Leaked on purpose: they
// outlive every call. (ArgumentHandler, a Python class, is the argument_handler hook.)
struct call_classes {
  PyObject *managed_allocation = nullptr;
  PyObject *pointer_like = nullptr; // tuple of cuplug pointer classes that are not DeviceAllocation
};

const call_classes &classes() {
  static call_classes *c = nullptr;
  if (c != nullptr)
    return *c;
  auto *made = new call_classes;
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

// CUDA Array Interface v3: a consumer orders its work after the producer's `stream`, through an
// event (the host does not wait). CUPLUG_CUDA_ARRAY_INTERFACE_SYNC=0 turns that off, as CuPy's
// CUPY_CUDA_ARRAY_INTERFACE_SYNC does, for producers that order their work otherwise.
bool cai_sync() {
  static const bool on = [] {
    const char *v = std::getenv("CUPLUG_CUDA_ARRAY_INTERFACE_SYNC");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

// The device address of a __cuda_array_interface__ (a true one) passed as a kernel argument,
// after ordering `launch_stream` behind the producer's stream (when launch_stream is set).
CUdeviceptr cai_pointer(PyObject *obj, const py::object &cai, py::handle launch_stream,
                        std::size_t index) {
  py::object get = cai.attr("get");
  if (!get("mask").is_none())
    raise(PyExc_TypeError, "parameter #" + std::to_string(index) + " (0-based): " + type_name(obj) +
                               " has a mask; masked CUDA arrays cannot be kernel arguments");
  if (launch_stream && cai_sync() && py::int_(get("version", 0)).cast<int>() >= 3) {
    py::object producer = get("stream");
    if (!producer.is_none()) {
      if (PyLong_Check(producer.ptr()) && producer.cast<long long>() == 0)
        raise(PyExc_ValueError,
              "parameter #" + std::to_string(index) + " (0-based): " + type_name(obj) +
                  ".__cuda_array_interface__ gives stream 0, which the protocol forbids (1 is "
                  "the legacy default stream)");
      stream_wait(producer, launch_stream);
    }
  }
  py::object data = cai["data"];
  const CUdeviceptr p = to_devptr(py::object(data[py::int_(0)]));
  if (p == 0) {
    // The protocol allows a null pointer only for an array of no elements.
    bool empty = false;
    for (py::handle extent : py::object(cai["shape"]))
      empty = empty || py::int_(py::reinterpret_borrow<py::object>(extent)).cast<long long>() == 0;
    if (!empty)
      raise(PyExc_ValueError,
            "parameter #" + std::to_string(index) + " (0-based): " + type_name(obj) +
                ".__cuda_array_interface__ gives data pointer 0 (null) for shape " +
                std::string(py::repr(cai["shape"])) + "; only an empty array may have no memory");
  }
  return p;
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
  void buffer(PyObject *obj, std::size_t index, const std::string &kernel) {
    if (PyObject_GetBuffer(obj, &view, with_format(PyBUF_SIMPLE)) != 0)
      raise(PyExc_TypeError, "cannot pass parameter #" + std::to_string(index) +
                                 " (0-based) by value: " + pending_message());
    how = kind::by_value;
    has_view = true;
    check_plain_buffer(view, ("kernel '" + kernel + "'").c_str(),
                       ("parameter #" + std::to_string(index) + " (0-based)").c_str());
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
              const std::string &kernel, py::handle launch_stream, CUcontext kernel_ctx) {
  const numpy_types &np = numpy();
  if (const numpy_scalar *s = find_scalar(Py_TYPE(obj))) {
    a.code = s->code;
    a.src = scalar_bytes(obj);
    a.size = s->size;
    a.align = s->align;
    return;
  }
  if (device_allocation *alloc = as_device_allocation(obj)) {
    const CUdeviceptr p = allocation_pointer(*alloc);
    const context_ptr &owner = alloc->get_context();
    if (kernel_ctx != nullptr && owner && owner->handle() != kernel_ctx)
      array::throw_mixed_devices("kernel '" + kernel + "'", "#" + std::to_string(index),
                                 owner->handle(), kernel_ctx);
    return a.pointer(p);
  }
  // cudaTextureObject_t / cudaSurfaceObject_t: 64-bit handles, passed like a pointer.
  if (unsigned long long handle; sampler_handle(obj, &handle))
    return a.pointer(static_cast<CUdeviceptr>(handle));
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
  // No ArgumentHandler can exist before cuplug._driver.arguments, which registers the class, is
  // imported: an unregistered hook means no argument is one.
  py::handle argument_handler = hooks::get(hooks::hook::argument_handler);
  if (argument_handler && is_instance(obj, argument_handler.ptr())) {
    // Its device pointer is filled in by pack_call once every argument has been checked.
    handlers.push_back(py::reinterpret_borrow<py::object>(obj));
    return a.pointer(0);
  }
  if (PyObject_TypeCheck(obj, np.ndarray)) {
    if (cls.managed_allocation != Py_None) {
      py::object base = py::handle(obj).attr("base");
      if (is_instance(base.ptr(), cls.managed_allocation))
        return a.pointer(allocation_pointer(*as_device_allocation(base)));
    }
    return a.buffer(obj, index, kernel);
  }
  if (PyObject_TypeCheck(obj, np.void_scalar))
    return a.buffer(obj, index, kernel);
  // cuplug's own arrays: their address, without building their interface dict.
  if (array::array_type() != nullptr && array::is_array(obj)) {
    const array::array_object *arr = array::as_array(obj);
    // Freed memory, or a destroyed context's, may already be another array's: refused (a flag
    // read), before the context compare (a destroyed context's handle may come back).
    const CUdeviceptr p = array::data_ptr(arr);
    if (kernel_ctx != nullptr && arr->ctx != nullptr && arr->ctx != kernel_ctx)
      array::throw_mixed_devices("kernel '" + kernel + "'", "#" + std::to_string(index), arr->ctx,
                                 kernel_ctx);
    return a.pointer(p);
  }
  if (py::object cai = attr_or_null(obj, "__cuda_array_interface__")) {
    const int truth = PyObject_IsTrue(cai.ptr());
    if (truth < 0)
      throw py::error_already_set();
    if (truth != 0)
      return a.pointer(cai_pointer(obj, cai, launch_stream, index));
  }
  if (py::object gpudata = attr_or_null(obj, "gpudata"))
    return a.pointer(to_devptr(gpudata));
  if (is_instance(obj, cls.pointer_like))
    return a.pointer(to_devptr(obj));
  // Device arrays that speak only DLPack (JAX, ...): imported for the call, ordered on the
  // launch's stream by their producer (DLPack's stream argument).
  if (launch_stream && PyObject_HasAttrString(obj, "__dlpack__") == 1 &&
      PyObject_HasAttrString(obj, "__dlpack_device__") == 1) {
    py::object ptr =
        hooks::require(hooks::hook::kernel_argument_pointer,
                       "a DLPack-only kernel argument")(py::handle(obj), launch_stream);
    if (!ptr.is_none())
      return a.pointer(to_devptr(ptr));
  }
  std::string hint;
  if (PyLong_Check(obj) || PyFloat_Check(obj) || PyComplex_Check(obj))
    hint = ": Python numbers have no C type; pass numpy.int32(x), numpy.float32(x), ... or use "
           "prepare()";
  raise(PyExc_TypeError, "invalid type on parameter #" + std::to_string(index) +
                             " (0-based): " + type_name(obj) + hint);
}

} // namespace

void pack_call(PyObject *const *args, std::size_t nargs, const param_layout *params,
               arg_buffer &out, std::vector<py::object> &handlers, const std::string &kernel,
               py::handle launch_stream, CUcontext kernel_ctx) {
  if (params != nullptr && params->size() != nargs)
    throw py::type_error("kernel '" + kernel + "' takes " + std::to_string(params->size()) +
                         " parameters, " + std::to_string(nargs) + " arguments given");
  std::size_t end = 0;
  if (params != nullptr)
    for (const auto &p : *params)
      end = std::max(end, p.first + p.second);
  out.assign_zero(end);
  std::size_t cursor = 0;
  const std::size_t first_handler = handlers.size();
  std::vector<std::size_t> handler_offsets;
  for (std::size_t i = 0; i < nargs; ++i) {
    call_arg a;
    const std::size_t handlers_before = handlers.size();
    classify(args[i], i, a, handlers, kernel, launch_stream, kernel_ctx);
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
    if (handlers.size() != handlers_before)
      handler_offsets.push_back(offset);
    cursor = offset + a.size;
  }
  // In/Out/InOut: every handler checks its array (Out: writable, contiguous, no objects) before
  // any of them allocates or copies, so a bad one fails before anything happened.
  for (std::size_t k = 0; k < handler_offsets.size(); ++k)
    handlers[first_handler + k].attr("check")();
  for (std::size_t k = 0; k < handler_offsets.size(); ++k) {
    py::object alloc = handlers[first_handler + k].attr("get_device_alloc")();
    const CUdeviceptr p = to_devptr(alloc);
    std::memcpy(out.data() + handler_offsets[k], &p, sizeof p);
  }
}

} // namespace cuplug::python
