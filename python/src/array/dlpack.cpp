// DLPack capsules for cuplug._core._dlpack: exporting device memory to other libraries (the
// capsule keeps the exporting Python object alive until the consumer's deleter call) and
// importing theirs (ownership moves into an `Imported` object whose end calls their deleter).
// Python (cuplug/_array/interop.py) maps dtypes and devices and decides; this file only builds
// and takes apart the C structs, and makes one stream wait for another.
#include "array/dlpack.hpp"
#include "bindings.hpp"
#include "driver/context.hpp"
#include "support/convert.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace cuplug::python {
namespace {

using namespace ::cuplug::dlpack;

// ---- export ---------------------------------------------------------------------------------

// One allocation per export: the managed struct the consumer sees, the arrays its tensor
// points into, and the reference that keeps the exporter alive.
template <class Managed> struct exported {
  Managed managed{};
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  PyObject *owner = nullptr;
};

// The consumer's call when it is done; may come from any thread, with or without the GIL.
template <class Managed> void delete_exported(Managed *self) noexcept {
  auto *holder = static_cast<exported<Managed> *>(self->manager_ctx);
  // At interpreter exit the reference is left alone: Python is tearing everything down.
  if (!interpreter_finalizing()) {
    PyGILState_STATE state = PyGILState_Ensure();
    {
      py::error_scope keep_pending_error; // the owner's release runs Python code
      Py_XDECREF(holder->owner);
    }
    PyGILState_Release(state);
  }
  delete holder;
}

// A capsule nobody consumed still owns its tensor; a consumed one was renamed "used_...".
template <class Managed> void destroy_capsule(PyObject *capsule) noexcept {
  const char *name =
      std::is_same<Managed, DLManagedTensorVersioned>::value ? versioned_name : legacy_name;
  if (!PyCapsule_IsValid(capsule, name))
    return;
  auto *managed = static_cast<Managed *>(PyCapsule_GetPointer(capsule, name));
  if (managed && managed->deleter)
    managed->deleter(managed);
}

template <class Managed>
py::capsule make_capsule(py::object owner, std::uintptr_t ptr, const py::tuple &shape,
                         const py::tuple &strides, const py::tuple &dtype, const py::tuple &device,
                         std::uint64_t flags) {
  auto holder = std::make_unique<exported<Managed>>();
  for (auto extent : shape)
    holder->shape.push_back(extent.cast<std::int64_t>());
  for (auto stride : strides)
    holder->strides.push_back(stride.cast<std::int64_t>());
  if (holder->shape.size() != holder->strides.size())
    throw py::value_error("DLPack export: " + std::to_string(holder->shape.size()) +
                          " extents but " + std::to_string(holder->strides.size()) + " strides");
  DLTensor &t = holder->managed.dl_tensor;
  t.data = reinterpret_cast<void *>(ptr);
  t.device = {device[0].cast<std::int32_t>(), device[1].cast<std::int32_t>()};
  t.ndim = static_cast<std::int32_t>(holder->shape.size());
  t.dtype = {dtype[0].cast<std::uint8_t>(), dtype[1].cast<std::uint8_t>(),
             dtype[2].cast<std::uint16_t>()};
  // Never null, even for 0-d tensors: some consumers read them unconditionally.
  holder->shape.reserve(1);
  holder->strides.reserve(1);
  t.shape = holder->shape.data();
  t.strides = holder->strides.data();
  t.byte_offset = 0;
  holder->managed.manager_ctx = holder.get();
  holder->managed.deleter = &delete_exported<Managed>;
  if constexpr (std::is_same<Managed, DLManagedTensorVersioned>::value) {
    holder->managed.version = {major_version, minor_version};
    holder->managed.flags = flags;
  } else if (flags != 0) {
    throw py::value_error("DLPack export: flags need a versioned capsule (max_version >= 1.0)");
  }
  const char *name =
      std::is_same<Managed, DLManagedTensorVersioned>::value ? versioned_name : legacy_name;
  PyObject *capsule = PyCapsule_New(&holder->managed, name, &destroy_capsule<Managed>);
  if (!capsule)
    throw py::error_already_set();
  holder->owner = owner.release().ptr();
  holder.release(); // the capsule (or its consumer) deletes it now
  return py::reinterpret_steal<py::capsule>(capsule);
}

// ---- import ---------------------------------------------------------------------------------

// A foreign tensor taken out of its capsule: owns it until release() or the end, then calls the
// producer's deleter once. Its int() is the data pointer, so it serves as a GPUArray's gpudata
// and base at once.
class imported {
public:
  explicit imported(const py::capsule &capsule) {
    const char *name = PyCapsule_GetName(capsule.ptr());
    if (name == nullptr)
      throw py::error_already_set();
    if (std::strcmp(name, versioned_name) == 0) {
      versioned_ = static_cast<DLManagedTensorVersioned *>(
          PyCapsule_GetPointer(capsule.ptr(), versioned_name));
      if (!versioned_)
        throw py::error_already_set();
      take(capsule, versioned_used_name);
      if (versioned_->version.major != major_version) {
        const auto found = versioned_->version;
        release(); // the spec: a consumer that cannot read the layout calls the deleter only
        throw py::buffer_error("DLPack tensor of ABI version " + std::to_string(found.major) + "." +
                               std::to_string(found.minor) + ", cuplug reads " +
                               std::to_string(major_version) + ".x");
      }
      tensor_ = &versioned_->dl_tensor;
      flags_ = versioned_->flags;
    } else if (std::strcmp(name, legacy_name) == 0) {
      legacy_ = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule.ptr(), legacy_name));
      if (!legacy_)
        throw py::error_already_set();
      take(capsule, legacy_used_name);
      tensor_ = &legacy_->dl_tensor;
    } else if (std::strcmp(name, versioned_used_name) == 0 ||
               std::strcmp(name, legacy_used_name) == 0) {
      throw py::value_error("this DLPack capsule was already consumed (its name is '" +
                            std::string(name) + "'); call __dlpack__() again for a new one");
    } else {
      throw py::value_error("not a DLPack capsule: its name is '" + std::string(name) +
                            "', expected 'dltensor_versioned' or 'dltensor'");
    }
    // The capsule is ours now (renamed): a refusal hands the tensor back to its producer
    // through the deleter, as the spec asks of a consumer that owns it, so nothing leaks.
    try {
      validate(*tensor_);
    } catch (...) {
      release();
      throw;
    }
  }
  ~imported() { release(); }
  imported(const imported &) = delete;
  imported &operator=(const imported &) = delete;

  // Hands the tensor back to its producer now; later use of the data is the caller's error.
  void release() noexcept {
    if (versioned_ && versioned_->deleter)
      versioned_->deleter(versioned_);
    else if (legacy_ && legacy_->deleter)
      legacy_->deleter(legacy_);
    versioned_ = nullptr;
    legacy_ = nullptr;
    tensor_ = nullptr;
  }

  std::uintptr_t ptr() const {
    const DLTensor &t = tensor();
    return reinterpret_cast<std::uintptr_t>(t.data) + t.byte_offset;
  }
  py::tuple shape() const {
    const DLTensor &t = tensor();
    py::tuple out(t.ndim);
    for (std::int32_t i = 0; i < t.ndim; ++i)
      out[i] = t.shape[i];
    return out;
  }
  // In elements, as DLPack gives them; None when the producer left them out (compact C order).
  py::object strides() const {
    const DLTensor &t = tensor();
    if (t.strides == nullptr)
      return py::none();
    py::tuple out(t.ndim);
    for (std::int32_t i = 0; i < t.ndim; ++i)
      out[i] = t.strides[i];
    return std::move(out);
  }
  py::tuple dtype() const {
    const DLTensor &t = tensor();
    return py::make_tuple(t.dtype.code, t.dtype.bits, t.dtype.lanes);
  }
  py::tuple device() const {
    const DLTensor &t = tensor();
    return py::make_tuple(t.device.device_type, t.device.device_id);
  }
  std::uint64_t flags() const { return flags_; }
  bool versioned() const { return versioned_ != nullptr; }
  bool alive() const { return tensor_ != nullptr; }

private:
  // What this importer reads of the tensor must be there and must not wrap: ndim in [0, 64]
  // with shape (and strides, when given) arrays for it, extents >= 0, data + byte_offset.
  static void validate(const DLTensor &t) {
    if (t.ndim < 0 || t.ndim > 64)
      throw py::buffer_error("DLPack tensor with ndim " + std::to_string(t.ndim) +
                             " (cuplug reads 0 to 64)");
    if (t.ndim > 0 && t.shape == nullptr)
      throw py::buffer_error("DLPack tensor with ndim " + std::to_string(t.ndim) +
                             " but no shape array (shape is NULL)");
    for (std::int32_t i = 0; i < t.ndim; ++i)
      if (t.shape[i] < 0)
        throw py::buffer_error("DLPack tensor with a negative extent " +
                               std::to_string(t.shape[i]));
    std::uintptr_t end = 0;
    if (__builtin_add_overflow(reinterpret_cast<std::uintptr_t>(t.data), t.byte_offset, &end))
      throw py::buffer_error("DLPack tensor whose data pointer plus byte_offset " +
                             std::to_string(t.byte_offset) + " wraps around the address space");
  }

  // Renaming is the protocol's "consumed" mark: the capsule's destructor then leaves it alone.
  static void take(const py::capsule &capsule, const char *used) {
    if (PyCapsule_SetName(capsule.ptr(), used) != 0)
      throw py::error_already_set();
  }
  const DLTensor &tensor() const {
    if (!tensor_)
      throw py::value_error("this imported DLPack tensor was released");
    return *tensor_;
  }

  DLManagedTensorVersioned *versioned_ = nullptr;
  DLManagedTensor *legacy_ = nullptr;
  DLTensor *tensor_ = nullptr;
  std::uint64_t flags_ = 0;
};

// (device ordinal, is managed) of device memory; the current context's device for ptr 0.
py::tuple pointer_device(std::uintptr_t ptr) {
  if (ptr == 0) {
    CUdevice dev = context::current_or_throw("pointer_device")->device();
    return py::make_tuple(static_cast<int>(dev), false);
  }
  int ordinal = 0;
  unsigned managed = 0;
  CUPLUG_CALL(cuPointerGetAttribute, &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
              static_cast<CUdeviceptr>(ptr));
  CUPLUG_CALL(cuPointerGetAttribute, &managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
              static_cast<CUdeviceptr>(ptr));
  return py::make_tuple(ordinal, managed != 0);
}

// (start, size) of the allocation the driver knows `ptr` to lie in; BufferError naming `what`
// for an address the driver does not know (a made-up or freed pointer, which would fault at
// use and poison the context).
py::tuple pointer_range(std::uintptr_t ptr, const std::string &what) {
  CUdeviceptr start = 0;
  std::size_t size = 0;
  auto get = [&](void *out, CUpointer_attribute attribute) {
    return ::cuplug::detail::entry(driver().cuPointerGetAttribute, "cuPointerGetAttribute")(
        out, attribute, static_cast<CUdeviceptr>(ptr));
  };
  CUresult r =
      ptr == 0 ? CUDA_ERROR_INVALID_VALUE : get(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
  if (r == CUDA_SUCCESS)
    r = get(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE);
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_FOUND)
    throw py::buffer_error(what + ": the CUDA driver knows no memory at address " +
                           std::to_string(ptr) +
                           " (a made-up, freed or null pointer); refusing to read or write it");
  check(r, "cuPointerGetAttribute");
  return py::make_tuple(static_cast<std::uintptr_t>(start), size);
}

} // namespace

// ---- streams --------------------------------------------------------------------------------

// Makes later work on `consumer` wait for the work issued so far on `producer` (streams as
// to_stream takes them; the ints 1 and 2 are the driver's legacy and per-thread default streams,
// as in DLPack and the CUDA Array Interface; None and 0 the legacy one), through an event,
// without blocking the host.
void stream_wait(py::handle producer_obj, py::handle consumer_obj) {
  auto norm = [](CUstream s) { return s == nullptr ? CU_STREAM_LEGACY : s; };
  CUstream producer = norm(to_stream(producer_obj));
  CUstream consumer = norm(to_stream(consumer_obj));
  if (producer == consumer)
    return;
  context::current_or_throw("stream_wait");
  CUevent event;
  CUPLUG_CALL(cuEventCreate, &event, CU_EVENT_DISABLE_TIMING);
  CUresult r = ::cuplug::detail::entry(driver().cuEventRecord, "cuEventRecord")(event, producer);
  const char *routine = "cuEventRecord";
  if (r == CUDA_SUCCESS) {
    r = ::cuplug::detail::entry(driver().cuStreamWaitEvent, "cuStreamWaitEvent")(consumer, event,
                                                                                 0);
    routine = "cuStreamWaitEvent";
  }
  // The wait is enqueued; destroying the event now is allowed and frees it once it completes.
  cleanup_call(::cuplug::detail::entry(driver().cuEventDestroy, "cuEventDestroy")(event),
               "cuEventDestroy");
  check(r, routine);
}

// Waits, the GIL released, until `stream_obj` (as to_stream takes it; None: the legacy default
// stream) has no work in flight; true where there was some (cuStreamQuery said not ready, then
// cuStreamSynchronize). Nothing to do where no context is current: there is no stream of this
// thread's to ask, and a consumer must make the array's context current before it can use it.
bool stream_settle(py::handle stream_obj) {
  CUstream s = to_stream(stream_obj);
  if (context::current() == nullptr)
    return false;
  if (s == nullptr)
    s = CU_STREAM_LEGACY;
  const CUresult r = ::cuplug::detail::entry(driver().cuStreamQuery, "cuStreamQuery")(s);
  if (r != CUDA_ERROR_NOT_READY) {
    check(r, "cuStreamQuery");
    return false;
  }
  CUPLUG_CALL_NOGIL(cuStreamSynchronize, s);
  return true;
}

void init_dlpack(py::module_ &m) {
  py::module_ d = m.def_submodule("_dlpack", "DLPack capsules and stream hand-over (interop.py)");
  d.attr("MAJOR_VERSION") = major_version;
  d.attr("MINOR_VERSION") = minor_version;
  d.attr("FLAG_READ_ONLY") = flag_read_only;
  d.attr("FLAG_IS_COPIED") = flag_is_copied;

  d.def(
      "export_capsule",
      [](py::object owner, std::uintptr_t ptr, const py::tuple &shape, const py::tuple &strides,
         const py::tuple &dtype, const py::tuple &device, bool versioned, std::uint64_t flags) {
        if (versioned)
          return make_capsule<DLManagedTensorVersioned>(std::move(owner), ptr, shape, strides,
                                                        dtype, device, flags);
        return make_capsule<DLManagedTensor>(std::move(owner), ptr, shape, strides, dtype, device,
                                             flags);
      },
      py::arg("owner"), py::arg("ptr"), py::arg("shape"), py::arg("strides"), py::arg("dtype"),
      py::arg("device"), py::arg("versioned"), py::arg("flags") = 0,
      "A 'dltensor_versioned' (or legacy 'dltensor') capsule over ptr; strides in elements, "
      "dtype (code, bits, lanes), device (type, id). Holds a reference to owner until the "
      "consumer's deleter call (or the unconsumed capsule's end).");

  py::class_<imported>(d, "Imported",
                       "A tensor taken from a DLPack capsule (the capsule is renamed 'used_...'); "
                       "the producer's deleter runs at release() or when this object goes.")
      .def(py::init<const py::capsule &>(), py::arg("capsule"))
      .def_property_readonly("ptr", &imported::ptr, "data + byte_offset")
      .def_property_readonly("shape", &imported::shape)
      .def_property_readonly("strides", &imported::strides, "in elements, or None (C order)")
      .def_property_readonly("dtype", &imported::dtype, "(code, bits, lanes)")
      .def_property_readonly("device", &imported::device, "(device_type, device_id)")
      .def_property_readonly("flags", &imported::flags)
      .def_property_readonly("versioned", &imported::versioned)
      .def_property_readonly("alive", &imported::alive)
      .def("release", &imported::release)
      .def("__int__", &imported::ptr)
      .def("__index__", &imported::ptr);

  d.def("stream_wait", &stream_wait, py::arg("producer"), py::arg("consumer"),
        "Later work on `consumer` waits for what `producer` has so far (event; host not "
        "blocked). Same stream (None, 0 and 1 all the legacy default): nothing to do.");
  d.def("stream_settle", &stream_settle, py::arg("stream"),
        "Waits (GIL released) until the stream (None: the legacy default) has no work in "
        "flight; True where it had some. Nothing to do where no context is current.");
  d.def(
      "stream_handle",
      [](py::handle stream) { return reinterpret_cast<std::uintptr_t>(to_stream(stream)); },
      py::arg("stream"), "The CUstream of anything to_stream takes, as an int (None: 0).");
  d.def("pointer_range", &pointer_range, py::arg("ptr"), py::arg("what"),
        "(start, size) of the allocation the driver knows ptr to lie in (pointer attributes "
        "RANGE_START_ADDR / RANGE_SIZE); BufferError naming `what` for an unknown address.");
  d.def("pointer_device", &pointer_device, py::arg("ptr"),
        "(device ordinal, is managed) of device memory at ptr; for 0, the current context's "
        "device.");
}

} // namespace cuplug::python
