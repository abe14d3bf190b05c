// PyCUDA's memory pools (spec §1.12, §13.5) as Python classes: DeviceMemoryPool,
// PageLockedMemoryPool, PageLockedAllocator and the pooled allocations, with the hot path
// (allocate, free) as CPython methods. The classes themselves are in pools.hpp.
#include "bindings.hpp"
#include "memory/pools.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"

#include <cuplug/pool/size_bins.hpp>

#include <cstdio>
#include <string>

namespace cuplug::python {
namespace {

// ---- the hot path: allocate and free as METH_FASTCALL / METH_NOARGS methods ---------------------
// pybind11's dispatcher (argument loaders, overload loop, the tuple CPython builds for it) costs
// about as much as the pool itself; these entry points take the arguments as CPython passes them.

PyTypeObject *device_memory_pool_type = nullptr;
PyTypeObject *pooled_device_allocation_type = nullptr;

// The C++ object behind `self`: straight from the instance for the exact class, through pybind11
// for subclasses (DebugMemoryPool) and anything unexpected (which raises TypeError).
template <class T> T &self_as(PyObject *self, PyTypeObject *type) {
  if (Py_TYPE(self) == type) {
    auto *inst = reinterpret_cast<py::detail::instance *>(self);
    if (inst->simple_layout && inst->simple_value_holder[0] != nullptr)
      return *static_cast<T *>(inst->simple_value_holder[0]);
  }
  return py::handle(self).cast<T &>();
}

// allocate(size, stream=None) and __call__, with PyCUDA's keyword names.
PyObject *pool_allocate(PyObject *self, PyObject *const *args, Py_ssize_t nargsf,
                        PyObject *kwnames) noexcept {
  try {
    device_memory_pool &pool = self_as<device_memory_pool>(self, device_memory_pool_type);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *size = nargs >= 1 ? args[0] : nullptr;
    PyObject *stream = nargs >= 2 ? args[1] : nullptr;
    const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs > 2)
      throw py::type_error("DeviceMemoryPool.allocate() takes (size, stream=None), got " +
                           std::to_string(nargs) + " positional arguments");
    for (Py_ssize_t i = 0; i < nkw; ++i) {
      const std::string key = py::str(PyTuple_GET_ITEM(kwnames, i));
      PyObject *&slot = key == "size" ? size : key == "stream" ? stream : size;
      if (key != "size" && key != "stream")
        throw py::type_error("DeviceMemoryPool.allocate() got an unexpected keyword argument '" +
                             key + "'");
      if (slot != nullptr)
        throw py::type_error("DeviceMemoryPool.allocate() got multiple values for argument '" +
                             key + "'");
      slot = args[nargs + i];
    }
    if (size == nullptr)
      throw py::type_error("DeviceMemoryPool.allocate() missing required argument 'size'");
    std::shared_ptr<pooled_device_allocation> a =
        pool.allocate(size, stream != nullptr ? py::handle(stream) : py::handle(Py_None));
    return py::cast(std::move(a)).release().ptr();
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

// PooledDeviceAllocation.free(): PyCUDA's message when freed twice.
PyObject *pooled_free(PyObject *self, PyObject *) noexcept {
  try {
    pooled_device_allocation &a =
        self_as<pooled_device_allocation>(self, pooled_device_allocation_type);
    if (a.freed())
      throw cuda_error("pooled_device_allocation::free", CUDA_ERROR_INVALID_HANDLE);
    a.free();
    Py_RETURN_NONE;
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

PyMethodDef allocate_def = {
    "allocate", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&pool_allocate)),
    METH_FASTCALL | METH_KEYWORDS,
    "allocate($self, /, size, stream=None)\n--\n\nA block of the pool." CUPLUG_DOC_PARAMS
    "size : int\n    Bytes.\n" CUPLUG_DOC_STREAM_PARAM CUPLUG_DOC_RETURNS
    "PooledDeviceAllocation\n    The block; freeing or dropping it gives it back to the pool.\n"};
PyMethodDef call_def = {
    "__call__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&pool_allocate)),
    METH_FASTCALL | METH_KEYWORDS,
    "__call__($self, /, size, stream=None)\n--\n\nSame as allocate(): a pool is an allocator."};
PyMethodDef free_def = {"free", &pooled_free, METH_NOARGS,
                        "free($self, /)\n--\n\nGives the block back to the pool now."};

void add_method(py::handle cls, PyMethodDef &def) {
  PyObject *descr = PyDescr_NewMethod(reinterpret_cast<PyTypeObject *>(cls.ptr()), &def);
  if (descr == nullptr)
    throw py::error_already_set();
  py::setattr(cls, def.ml_name, py::reinterpret_steal<py::object>(descr));
}

template <class Class, class Holder> void expose_memory_pool(py::class_<Class, Holder> &c) {
  c.def_property_readonly(
       "held_blocks", [](const Class &p) { return p.counters().held_blocks; },
       "Blocks held for reuse (freed by their users, not given back upstream).")
      .def_property_readonly(
          "active_blocks", [](const Class &p) { return p.counters().active_blocks; },
          "Blocks in use.")
      .def_property_readonly(
          "managed_bytes", [](const Class &p) { return p.counters().managed_bytes; },
          "Bytes taken from the upstream: held + active blocks.")
      .def_property_readonly(
          "active_bytes", [](const Class &p) { return p.counters().active_bytes; },
          "Requested bytes of the blocks in use.")
      .def_property_readonly(
          "held_bytes", [](const Class &p) { return p.counters().held_bytes; },
          "Bytes of the blocks held for reuse.")
      .def_static(
          "bin_number",
          [](hint::size size) { return pool::bin_number(to_size(size, "bin_number: size")); },
          py::arg("size"),
          "The size class a request falls in." CUPLUG_DOC_PARAMS
          "size : int\n    A request, in bytes.\n" CUPLUG_DOC_RETURNS "int\n    Its bin.\n")
      .def_static("alloc_size", &pool::alloc_size, py::arg("bin"),
                  "The block size of a size class." CUPLUG_DOC_PARAMS
                  "bin : int\n    A bin number (from bin_number).\n" CUPLUG_DOC_RETURNS
                  "int\n    Bytes of each block in that bin.\n")
      .def("free_held", &Class::free_held,
           "Gives every held block back to the upstream; returns the bytes released.")
      .def("stop_holding", &Class::stop_holding,
           "Frees what is held; from now on freed blocks go straight back.")
      .def("set_trace", &Class::set_trace, py::arg("flag"),
           "Prints a '[pool] ...' line for each event while on (nested like "
           "PyCUDA's)." CUPLUG_DOC_PARAMS "flag : bool\n    True turns tracing on, False off.\n")
      .def(
          "stats", [](const Class &p) { return stats_dict(*p.pool()); },
          "The pool backend's statistics." CUPLUG_DOC_RETURNS
          "dict[str, int]\n    bytes_in_use, peak_bytes and bytes_held (bytes); allocations, "
          "deallocations and failures (counts).\n");
}

} // namespace

void init_pools(py::module_ &m) {
  m.def(
      "bitlog2", [](hint::size n) { return pool::bitlog2(to_size(n, "bitlog2: n")); }, py::arg("n"),
      "floor(log2(n)); 0 for n = 0." CUPLUG_DOC_PARAMS "n : int\n    A non-negative integer.\n");

  py::class_<pooled_device_allocation, device_allocation, std::shared_ptr<pooled_device_allocation>>
      pda(m, "PooledDeviceAllocation",
          "Device memory from a DeviceMemoryPool; a DeviceAllocation. free() or dropping it gives "
          "the block back to the pool.");
  pda.def("__len__", &pooled_device_allocation::size, "The requested size in bytes.")
      .def("__repr__", [](const pooled_device_allocation &a) {
        if (a.freed())
          return std::string("<PooledDeviceAllocation (freed)>");
        char addr[32];
        std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(a.ptr()));
        return "<PooledDeviceAllocation " + std::string(addr) + ", " + std::to_string(a.size()) +
               " bytes>";
      });
  add_method(pda, free_def);
  pooled_device_allocation_type = reinterpret_cast<PyTypeObject *>(pda.ptr());

  py::class_<device_memory_pool, std::shared_ptr<device_memory_pool>> dmp(
      m, "DeviceMemoryPool",
      "A caching pool of device memory in the current context (PyCUDA's): size classes of "
      "1/16 of a power of two, stream-ordered reuse, frees what it holds and retries on out of "
      "memory. `upstream`: the allocator backend it draws from (name or Allocator; default "
      "'device'). `backend`: the pool backend that does the pooling (default 'pool'; any "
      "allocator plugin that takes an upstream and keeps pool statistics). Pass pool.allocate "
      "as an allocator= argument.");
  dmp.def(py::init([](const hint::upstream &upstream, const hint::str_or_none &backend) {
            return std::make_shared<device_memory_pool>(upstream, backend);
          }),
          py::arg("upstream") = py::none(), py::arg("backend") = py::none(),
          "A pool in the current context." CUPLUG_DOC_PARAMS
          "upstream : str | Allocator | None\n    The allocator backend it draws from, by name "
          "or object; None: 'device'.\n"
          "backend : str | None\n    The pool backend; None: 'pool'.\n");
  add_method(dmp, allocate_def);
  add_method(dmp, call_def);
  device_memory_pool_type = reinterpret_cast<PyTypeObject *>(dmp.ptr());
  expose_memory_pool(dmp);

  py::class_<page_locked_allocator, std::shared_ptr<page_locked_allocator>>(
      m, "PageLockedAllocator", "cuMemHostAlloc with `flags` (host_alloc_flags), for pools.")
      .def(py::init([](hint::size flags) {
             // host_alloc_flags members and plain ints alike
             const long long value = py::int_(py::reinterpret_borrow<py::object>(flags));
             if (value < 0 || value > 0xffffffffLL)
               throw py::value_error("PageLockedAllocator: flags must be host_alloc_flags bits, "
                                     "got " +
                                     std::to_string(value));
             return std::make_shared<page_locked_allocator>(
                 pool::host_alloc_flags(value, "PageLockedAllocator: flags"));
           }),
           py::arg("flags") = 0,
           "An allocator." CUPLUG_DOC_PARAMS "flags : int\n    host_alloc_flags, or-ed.\n")
      .def_property_readonly("flags", &page_locked_allocator::flags,
                             "The host_alloc_flags it allocates with.");

  py::class_<pooled_host_allocation, std::shared_ptr<pooled_host_allocation>>(
      m, "PooledHostAllocation", "The base of an array from a PageLockedMemoryPool.")
      .def("free", &pooled_host_allocation::free,
           "Gives the block back to the pool now (the array must not be used after).")
      .def("__len__", &pooled_host_allocation::size, "The requested size in bytes.");

  py::class_<page_locked_memory_pool, std::shared_ptr<page_locked_memory_pool>> plmp(
      m, "PageLockedMemoryPool",
      "A caching pool of page-locked host memory (PyCUDA's); allocate() returns ndarrays. "
      "`backend`: the pool backend, as for DeviceMemoryPool.");
  plmp.def(py::init([](const hint::host_allocator &alloc, const hint::str_or_none &backend) {
             if (alloc.is_none())
               return std::make_shared<page_locked_memory_pool>(page_locked_allocator(0), backend);
             return std::make_shared<page_locked_memory_pool>(
                 alloc.cast<const page_locked_allocator &>(), backend);
           }),
           py::arg("allocator") = py::none(), py::arg("backend") = py::none(),
           "A pool." CUPLUG_DOC_PARAMS
           "allocator : PageLockedAllocator | None\n    Where blocks come from; None: "
           "PageLockedAllocator(0).\n"
           "backend : str | None\n    The pool backend; None: 'pool'.\n")
      .def(
          "allocate",
          [](page_locked_memory_pool &pool, const hint::shape &shape, const hint::dtype &dtype,
             const hint::order &order) { return pool.allocate(shape, dtype, order); },
          py::arg("shape"), py::arg("dtype"), py::arg("order") = "C",
          "An uninitialised ndarray in pooled page-locked memory; .base is a "
          "PooledHostAllocation." CUPLUG_DOC_PARAMS
          "shape : int | tuple[int, ...]\n    The array's shape, in elements.\n"
          "dtype : numpy.typing.DTypeLike\n    Its element type.\n"
          "order : str\n    'C' (row-major) or 'F' (column-major).\n");
  expose_memory_pool(plmp);
}

} // namespace cuplug::python
