// Device memory: DeviceAllocation, mem_alloc through the selected allocator backend, pitched,
// managed and IPC memory, PointerHolderBase.
#include "bindings.hpp"
#include "driver/context.hpp"
#include "memory/context_allocators.hpp"
#include "memory/memory.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"
#include "support/host_buffer.hpp"
#include "support/nvtx_ranges.hpp"

#include <cuplug/backends.hpp>

#include <cstdio>
#include <cstring>
#include <string>

namespace cuplug::python {

// ---- device_allocation -------------------------------------------------------------------------

device_allocation::device_allocation(context_ptr ctx, CUdeviceptr ptr, std::size_t bytes,
                                     plugin_ptr<allocator> alloc, CUstream stream,
                                     py::object stream_owner)
    : ctx_(std::move(ctx)), ptr_(ptr), bytes_(bytes), allocator_(std::move(alloc)), stream_(stream),
      stream_owner_(std::move(stream_owner)) {}

device_allocation::device_allocation(context_ptr ctx, CUdeviceptr ptr, std::size_t bytes)
    : ctx_(std::move(ctx)), ptr_(ptr), bytes_(bytes) {}

device_allocation::~device_allocation() {
  if (!freed_)
    release();
  // The stream's Python object is dropped with the GIL; at interpreter exit it is leaked.
  if (stream_owner_) {
    if (interpreter_finalizing()) {
      stream_owner_.release();
    } else {
      py::gil_scoped_acquire gil;
      stream_owner_ = py::object();
    }
  }
}

void device_allocation::release() noexcept {
  // Zero-byte allocations own nothing; at exit the driver reclaims everything anyway.
  if (ptr_ == 0 || interpreter_finalizing())
    return;
  try {
    scoped_activation activate(ctx_);
    if (allocator_) {
      allocator_->deallocate(ptr_, bytes_, stream_);
      // This may be the allocator's last owner (a pool its context's table has let go): its
      // destructor gives what it holds back to the driver, which needs this context current.
      allocator_.reset();
    } else {
      cleanup_call(detail::entry(driver().cuMemFree, "cuMemFree")(ptr_), "cuMemFree");
    }
  } catch (...) {
    // The context is gone (detached or destroyed): its memory went with it, as in PyCUDA.
  }
}

void device_allocation::free() {
  if (freed_)
    throw cuda_error("device_allocation::free", CUDA_ERROR_INVALID_HANDLE);
  release();
  freed_ = true;
  ctx_.reset();
  allocator_.reset();
  stream_owner_ = py::object();
}

void device_allocation::throw_freed(const char *routine) {
  throw cuda_error(routine, CUDA_ERROR_INVALID_HANDLE, "allocation was freed");
}

std::shared_ptr<managed_allocation> managed_allocation::allocate(std::size_t bytes,
                                                                 unsigned flags) {
  context_ptr ctx = context::current_or_throw();
  // PyCUDA's default mem_flags=0 is not a valid attach flag; 0 means GLOBAL here.
  if (flags == 0)
    flags = CU_MEM_ATTACH_GLOBAL;
  CUdeviceptr ptr = 0;
  if (bytes != 0)
    CUPLUG_CALL(cuMemAllocManaged, &ptr, bytes, flags);
  return std::make_shared<managed_allocation>(std::move(ctx), ptr, bytes);
}

void managed_allocation::attach(unsigned flags, CUstream stream) {
  CUdeviceptr p = ptr();
  scoped_activation activate(get_context());
  CUPLUG_CALL(cuStreamAttachMemAsync, stream, p, 0, flags);
}

// ---- allocation through the backend -------------------------------------------------------------

namespace {

PyTypeObject *device_allocation_type = nullptr;

// The part of a cuda_error message after "<routine> failed: <description> - ", or "".
std::string error_extra(const cuda_error &e) {
  std::string what = e.what();
  std::size_t pos = what.find(" - ");
  return pos == std::string::npos ? std::string() : what.substr(pos + 3);
}

} // namespace

device_allocation_ptr allocate_device(std::size_t bytes, py::handle stream_obj) {
  CUstream stream = to_stream(stream_obj);
  context_ptr ctx = context::current_or_throw();
  plugin_ptr<allocator> alloc = per_context(ctx, current_allocator());
  nvtx_range range{"cuplug alloc", bytes_payload(bytes)};
  std::uintptr_t ptr = 0;
  try {
    ptr = alloc->allocate(bytes, stream);
  } catch (const cuda_error &e) {
    if (e.code() != CUDA_ERROR_OUT_OF_MEMORY)
      throw;
    // Dropped-but-uncollected DeviceAllocations may hold the memory we need (PyCUDA does this).
    py::module_::import("gc").attr("collect")();
    try {
      ptr = alloc->allocate(bytes, stream);
    } catch (const cuda_error &again) {
      if (again.code() != CUDA_ERROR_OUT_OF_MEMORY)
        throw;
      // An allocator's own out_of_memory already names the requested size and its state.
      if (dynamic_cast<const out_of_memory *>(&again) != nullptr)
        throw;
      allocator_stats stats = alloc->stats();
      std::string extra =
          "allocator '" + alloc->backend_name() + "'; gc.collect() and a retry did not help";
      std::string original = error_extra(again);
      if (!original.empty())
        extra += "; " + original;
      throw out_of_memory(again.routine().c_str(), bytes, stats.bytes_in_use, stats.bytes_held, 0,
                          extra);
    }
  }
  // Keep the stream's Python object alive while memory ordered on it is outstanding.
  py::object owner;
  if (!stream_obj.is_none() && !PyLong_Check(stream_obj.ptr()))
    owner = py::reinterpret_borrow<py::object>(stream_obj);
  return std::make_shared<device_allocation>(std::move(ctx), static_cast<CUdeviceptr>(ptr), bytes,
                                             std::move(alloc), stream, std::move(owner));
}

device_allocation *as_device_allocation(py::handle obj) noexcept {
  if (device_allocation_type == nullptr || !PyObject_TypeCheck(obj.ptr(), device_allocation_type))
    return nullptr;
  if (Py_TYPE(obj.ptr()) == device_allocation_type) {
    auto *inst = reinterpret_cast<py::detail::instance *>(obj.ptr());
    return static_cast<device_allocation *>(inst->get_value_and_holder().value_ptr());
  }
  try {
    return obj.cast<device_allocation *>();
  } catch (...) {
    PyErr_Clear();
    return nullptr;
  }
}

// ---- bindings -----------------------------------------------------------------------------------

namespace {

// Exports raw memory through the buffer protocol; holds the allocation that owns it.
struct raw_buffer {
  py::object owner;
  void *data;
  std::size_t size;
};

py::memoryview make_buffer(py::object owner, CUdeviceptr base, std::size_t limit, bool limit_known,
                           std::size_t size, std::size_t offset) {
  if (limit_known && (offset > limit || size > limit - offset))
    throw py::value_error("as_buffer: " + std::to_string(size) + " bytes at offset " +
                          std::to_string(offset) + " exceed the allocation of " +
                          std::to_string(limit) + " bytes");
  raw_buffer view{std::move(owner), reinterpret_cast<void *>(base + offset), size};
  py::object exporter = py::cast(std::move(view));
  return py::reinterpret_steal<py::memoryview>(PyMemoryView_FromObject(exporter.ptr()));
}

// A Python-defined pointer holder (PyCUDA's PointerHolderBase): get_pointer() is overridden.
class pointer_holder_base {
public:
  virtual ~pointer_holder_base() = default;
  virtual CUdeviceptr get_pointer() const = 0;
};

class pointer_holder_trampoline : public pointer_holder_base {
public:
  CUdeviceptr get_pointer() const override {
    py::gil_scoped_acquire gil;
    py::function override =
        py::get_override(static_cast<const pointer_holder_base *>(this), "get_pointer");
    if (!override)
      throw py::type_error("PointerHolderBase subclasses must override get_pointer()");
    py::object result = override();
    if (py::isinstance<pointer_holder_base>(result))
      throw py::type_error("get_pointer() must return a device pointer, not a PointerHolderBase");
    return to_devptr(result);
  }
};

// An opened IPC memory handle (cuIpcOpenMemHandle); closed by close() or on destruction.
class ipc_mem_handle {
public:
  ipc_mem_handle(py::buffer handle, unsigned flags) : ctx_(context::current_or_throw()) {
    py::buffer_info info = handle.request();
    check_plain_buffer(info, "IPCMemoryHandle", "handle");
    std::size_t bytes = static_cast<std::size_t>(info.size * info.itemsize);
    if (bytes != sizeof(CUipcMemHandle))
      throw py::value_error("IPCMemoryHandle: an IPC memory handle is " +
                            std::to_string(sizeof(CUipcMemHandle)) + " bytes, got " +
                            std::to_string(bytes));
    CUipcMemHandle h;
    std::memcpy(&h, info.ptr, sizeof h);
    CUPLUG_CALL(cuIpcOpenMemHandle, &ptr_, h, flags);
  }
  ~ipc_mem_handle() {
    if (valid_)
      release();
  }
  CUdeviceptr ptr() const {
    if (!valid_)
      throw cuda_error("ipc_mem_handle", CUDA_ERROR_INVALID_HANDLE, "handle was closed");
    return ptr_;
  }
  void close() {
    if (!valid_)
      throw cuda_error("ipc_mem_handle::close", CUDA_ERROR_INVALID_HANDLE);
    release();
    valid_ = false;
    ctx_.reset();
  }

private:
  void release() noexcept {
    release_under(ctx_, "cuIpcCloseMemHandle", [this] {
      return detail::entry(driver().cuIpcCloseMemHandle, "cuIpcCloseMemHandle")(ptr_);
    });
  }
  context_ptr ctx_;
  CUdeviceptr ptr_ = 0;
  bool valid_ = true;
};

std::string hex(std::uintptr_t value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

} // namespace

void init_memory(py::module_ &m) {
  py::class_<raw_buffer>(m, "_RawBuffer", py::buffer_protocol()).def_buffer([](raw_buffer &b) {
    return py::buffer_info(b.data, 1, py::format_descriptor<unsigned char>::format(), 1,
                           {static_cast<py::ssize_t>(b.size)}, {1});
  });

  auto da = py::class_<device_allocation, device_allocation_ptr>(
      m, "DeviceAllocation",
      "Device memory; no public constructor (see mem_alloc). Freed by free() or when dropped.");
  device_allocation_type = reinterpret_cast<PyTypeObject *>(da.ptr());
  da.def("__int__", &device_allocation::ptr)
      .def("__index__", &device_allocation::ptr)
      .def_property_readonly("size", &device_allocation::size, "Size in bytes.")
      .def_property_readonly("freed", &device_allocation::freed,
                             "Whether free() was called (the memory is gone).")
      .def_property_readonly(
          "backend",
          [](const device_allocation &a) -> hint::str_or_none {
            if (a.get_allocator())
              return py::str(a.get_allocator()->backend_name());
            return py::none();
          },
          "Name of the allocator backend that made it; None for driver memory.")
      .def(
          "as_buffer",
          [](py::object self, std::size_t size, std::size_t offset) {
            auto &a = self.cast<device_allocation &>();
            return make_buffer(self, a.ptr(), a.size(), true, size, offset);
          },
          py::arg("size"), py::arg("offset") = 0,
          "A writable memoryview of the memory (useful for managed memory only: host access to "
          "device memory faults)." CUPLUG_DOC_PARAMS "size : int\n    Bytes in the view.\n"
          "offset : int\n    Bytes from the allocation's start to the view's.\n")
      .def("free", &device_allocation::free, "Releases the memory now; a second call raises.")
      .def("__repr__", [](const device_allocation &a) {
        if (a.freed())
          return std::string("<DeviceAllocation (freed)>");
        return "<DeviceAllocation " + hex(a.ptr()) + ", " + std::to_string(a.size()) + " bytes>";
      });

  py::class_<managed_allocation, device_allocation, std::shared_ptr<managed_allocation>>(
      m, "ManagedAllocation", "Managed (unified) memory from cuMemAllocManaged.")
      .def("get_device_pointer", &managed_allocation::ptr,
           "The device address, an int (the same address works on the host).")
      .def(
          "attach",
          [](managed_allocation &a, unsigned flags, hint::stream stream) {
            a.attach(flags, to_stream(stream));
          },
          py::arg("mem_flags"), py::arg("stream") = py::none(),
          "Changes which streams may access the memory (cuStreamAttachMemAsync)." CUPLUG_DOC_PARAMS
          "mem_flags : int\n    A mem_attach_flags value: GLOBAL, HOST or SINGLE.\n"
          "stream : Stream | None\n    The stream the attachment is ordered on, and the one "
          "stream that may access the memory with SINGLE.\n");

  m.def(
      "mem_alloc",
      [](hint::size bytes, hint::stream stream) {
        return allocate_device(to_size(bytes, "mem_alloc: bytes"), stream);
      },
      py::arg("bytes"), py::arg("stream") = py::none(),
      "Allocates device memory from the selected allocator backend." CUPLUG_DOC_PARAMS
      "bytes : int\n    Size, in bytes.\n"
      "stream : Stream | None\n    The stream the allocation is ordered on (stream-ordered "
      "allocators); None: the legacy default stream.\n" CUPLUG_DOC_RETURNS
      "DeviceAllocation\n    The memory, freed when dropped or by its free().\n");

  m.def(
      "mem_alloc_managed",
      [](hint::size bytes, unsigned flags) {
        return managed_allocation::allocate(to_size(bytes, "mem_alloc_managed: bytes"), flags);
      },
      py::arg("bytes"), py::arg("mem_flags") = 0,
      "Allocates managed (unified) memory, reachable from the host and every device "
      "(cuMemAllocManaged)." CUPLUG_DOC_PARAMS "bytes : int\n    Size, in bytes.\n"
      "mem_flags : int\n    A mem_attach_flags value (0 means GLOBAL).\n" CUPLUG_DOC_RETURNS
      "ManagedAllocation\n    The memory.\n");

  m.def(
      "mem_alloc_pitch",
      [](hint::size width, hint::size height, unsigned access_size) {
        context_ptr ctx = context::current_or_throw();
        CUdeviceptr ptr = 0;
        std::size_t pitch = 0;
        std::size_t h = to_size(height, "mem_alloc_pitch: height");
        CUPLUG_CALL(cuMemAllocPitch, &ptr, &pitch, to_size(width, "mem_alloc_pitch: width"), h,
                    access_size);
        auto alloc = std::make_shared<device_allocation>(std::move(ctx), ptr, pitch * h);
        return py::make_tuple(alloc, pitch);
      },
      py::arg("width"), py::arg("height"), py::arg("access_size"),
      "Allocates pitched device memory for a 2D array (cuMemAllocPitch)." CUPLUG_DOC_PARAMS
      "width : int\n    Bytes per row.\n"
      "height : int\n    Rows.\n"
      "access_size : int\n    Bytes of the elements the kernels read: 4, 8 or "
      "16.\n" CUPLUG_DOC_RETURNS
      "tuple[DeviceAllocation, int]\n    The memory and its pitch (bytes "
      "from one row's start to the next's).\n");

  m.def(
      "mem_get_info",
      [] {
        std::size_t free_bytes = 0, total = 0;
        CUPLUG_CALL(cuMemGetInfo, &free_bytes, &total);
        return py::make_tuple(free_bytes, total);
      },
      "The current context's device memory (cuMemGetInfo)." CUPLUG_DOC_RETURNS
      "tuple[int, int]\n    (free, total), in bytes.\n");

  m.def(
      "mem_get_address_range",
      [](hint::device_ptr ptr) {
        CUdeviceptr base = 0;
        std::size_t size = 0;
        CUPLUG_CALL(cuMemGetAddressRange, &base, &size, to_devptr(ptr));
        return py::make_tuple(base, size);
      },
      py::arg("ptr"),
      "The allocation an address lies in (cuMemGetAddressRange)." CUPLUG_DOC_PARAMS
      "ptr : DeviceAllocation | int\n    A device address.\n" CUPLUG_DOC_RETURNS
      "tuple[int, int]\n    (base address, size in bytes) of the allocation.\n");

  m.def(
      "mem_get_ipc_handle",
      [](hint::device_ptr ptr) -> hint::bytearray {
        CUipcMemHandle h;
        CUPLUG_CALL(cuIpcGetMemHandle, &h, to_devptr(ptr));
        return py::reinterpret_steal<py::object>(
            PyByteArray_FromStringAndSize(reinterpret_cast<const char *>(&h), sizeof h));
      },
      py::arg("devptr"),
      "A handle another process can open with IPCMemoryHandle "
      "(cuIpcGetMemHandle)." CUPLUG_DOC_PARAMS
      "devptr : DeviceAllocation | int\n    The start of an allocation made "
      "by cuMemAlloc (mem_alloc with the device allocator).\n" CUPLUG_DOC_RETURNS
      "bytearray\n    The 64-byte handle.\n");

  py::class_<ipc_mem_handle>(m, "IPCMemoryHandle",
                             "Another process's device memory, opened in the current context "
                             "from its mem_get_ipc_handle() (cuIpcOpenMemHandle); int() is its "
                             "address here.")
      .def(py::init<py::buffer, unsigned>(), py::arg("handle"),
           py::arg("flags") = static_cast<unsigned>(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
           "Opens the memory." CUPLUG_DOC_PARAMS
           "handle : collections.abc.Buffer\n    The 64 bytes mem_get_ipc_handle() gave in the "
           "other process.\n"
           "flags : int\n    ipc_mem_flags (default LAZY_ENABLE_PEER_ACCESS).\n")
      .def("__int__", &ipc_mem_handle::ptr)
      .def("__index__", &ipc_mem_handle::ptr)
      .def("close", &ipc_mem_handle::close, "Closes the mapping now (cuIpcCloseMemHandle).");

  py::class_<pointer_holder_base, pointer_holder_trampoline>(
      m, "PointerHolderBase",
      "Base for Python objects that own device memory: override get_pointer() and call "
      "super().__init__().")
      .def(py::init<>())
      .def("get_pointer", &pointer_holder_base::get_pointer,
           "The device address, an int: subclasses override this.")
      .def("__int__", &pointer_holder_base::get_pointer)
      .def("__index__", &pointer_holder_base::get_pointer)
      .def(
          "as_buffer",
          [](py::object self, std::size_t size, std::size_t offset) {
            CUdeviceptr base = self.cast<pointer_holder_base &>().get_pointer();
            return make_buffer(self, base, 0, false, size, offset);
          },
          py::arg("size"), py::arg("offset") = 0,
          "A writable memoryview of the memory (host access works for managed memory "
          "only)." CUPLUG_DOC_PARAMS "size : int\n    Bytes in the view.\n"
          "offset : int\n    Bytes from get_pointer() to the view's start.\n");
}

} // namespace cuplug::python
