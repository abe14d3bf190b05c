// Context (spec §1.5) plus `with ctx:`. Most methods are static and act on the calling thread's
// current context, as in PyCUDA.
#include "bindings.hpp"
#include "driver/context_lookup.hpp"
#include "driver/device.hpp"
#include "support/hints.hpp"

namespace cuplug::python {

void init_context(py::module_ &m) {
  py::class_<context, context_ptr>(
      m, "Context",
      "A CUDA context. Device.make_context() creates one and makes it current; "
      "Device.retain_primary_context() shares the device's primary context (not pushed). Each "
      "thread has its own stack of current contexts: push() / Context.pop(), or `with ctx:`.\n\n"
      "Objects made in a context (streams, events, memory, modules) keep it alive, and are used "
      "under it from any thread: a call from a thread where their context is not current pushes "
      "it for the duration of the call and pops it afterwards.")
      .def_static(
          "attach",
          [](unsigned) -> context_ptr {
            throw not_supported("Context.attach() is not available: cuCtxAttach was removed "
                                "from CUDA. Use Device.make_context() or "
                                "Device.retain_primary_context() and push().");
          },
          py::arg("flags") = 0,
          "Raises NotSupportedError: cuCtxAttach was removed from CUDA." CUPLUG_DOC_PARAMS
          "flags : int\n    Ignored.\n")
      .def("push", &context::push, "Makes this context current on this thread's stack.")
      .def_static(
          "pop", [] { context::pop(); },
          "Pops the top of the calling thread's context stack (whichever context that is).")
      .def("detach", &context::detach,
           "Gives the context up now: destroys a created context, releases a primary one. "
           "Objects still made in it become unusable.")
      .def_static(
          "get_device",
          [] {
            CUdevice dev;
            CUPLUG_CALL(cuCtxGetDevice, &dev, nullptr);
            return device{dev};
          },
          "The current context's Device.")
      .def_static(
          "synchronize", [] { CUPLUG_CALL_NOGIL(cuCtxSynchronize, nullptr); },
          "Waits until the current context's work is done.")
      .def_static(
          "get_current", [](bool adopt) { return adopt ? context::current() : context::stacked(); },
          py::arg("adopt") = false,
          "The top of this thread's context stack, None if it is empty (as PyCUDA: code that "
          "pops until get_current() is None pops only its own contexts).\n\n"
          "Parameters\n----------\n"
          "adopt : bool\n"
          "    If the stack is empty, return the context another library made current (CuPy, "
          "PyTorch), adopted: the one cuplug's operations then run in.")
      .def_static(
          "set_limit",
          [](int limit, size_t value) {
            CUPLUG_CALL(cuCtxSetLimit, static_cast<CUlimit>(limit), value);
          },
          py::arg("limit"), py::arg("value"),
          "Sets a limit of the current context (cuCtxSetLimit)." CUPLUG_DOC_PARAMS
          "limit : limit\n    Which one (STACK_SIZE, PRINTF_FIFO_SIZE, MALLOC_HEAP_SIZE, ...).\n"
          "value : int\n    Its new value (bytes for the sizes).\n")
      .def_static(
          "get_limit",
          [](int limit) {
            size_t value;
            CUPLUG_CALL(cuCtxGetLimit, &value, static_cast<CUlimit>(limit));
            return value;
          },
          py::arg("limit"),
          "A limit of the current context (cuCtxGetLimit)." CUPLUG_DOC_PARAMS
          "limit : limit\n    Which one.\n" CUPLUG_DOC_RETURNS
          "int\n    Its value (bytes for the sizes).\n")
      .def_static(
          "set_cache_config",
          [](int config) { CUPLUG_CALL(cuCtxSetCacheConfig, static_cast<CUfunc_cache>(config)); },
          py::arg("config"),
          "Sets the current context's preferred L1 / shared memory split." CUPLUG_DOC_PARAMS
          "config : func_cache\n    The preference.\n")
      .def_static(
          "get_cache_config",
          [] {
            CUfunc_cache config;
            CUPLUG_CALL(cuCtxGetCacheConfig, &config);
            return config;
          },
          "The current context's preferred L1 / shared memory split, a func_cache.")
      .def_static(
          "set_shared_config",
          [](int config) {
            CUPLUG_CALL(cuCtxSetSharedMemConfig, static_cast<CUsharedconfig>(config));
          },
          py::arg("config"),
          "Sets the current context's shared memory bank size (deprecated by "
          "CUDA)." CUPLUG_DOC_PARAMS "config : shared_config\n    The bank size.\n")
      .def_static(
          "get_shared_config",
          [] {
            CUsharedconfig config;
            CUPLUG_CALL(cuCtxGetSharedMemConfig, &config);
            return config;
          },
          "The current context's shared memory bank size, a shared_config.")
      .def(
          "get_api_version",
          [](const context &self) {
            unsigned version;
            CUPLUG_CALL(cuCtxGetApiVersion, self.handle(), &version);
            return version;
          },
          "The CUDA API version the context was made with, e.g. 3020 (cuCtxGetApiVersion).")
      .def_static(
          "enable_peer_access",
          [](const context &peer, unsigned flags) {
            CUPLUG_CALL(cuCtxEnablePeerAccess, peer.handle(), flags);
          },
          py::arg("peer"), py::arg("flags") = 0,
          "Lets the current context access memory of `peer` "
          "(cuCtxEnablePeerAccess)." CUPLUG_DOC_PARAMS "peer : Context\n    The peer context.\n"
          "flags : int\n    Must be 0.\n")
      .def_static(
          "disable_peer_access",
          [](const context &peer) { CUPLUG_CALL(cuCtxDisablePeerAccess, peer.handle()); },
          py::arg("peer"),
          "Stops the current context's access to memory of `peer`." CUPLUG_DOC_PARAMS
          "peer : Context\n    The peer context.\n")
      .def_property_readonly(
          "handle",
          [](const context &self) { return reinterpret_cast<std::intptr_t>(self.handle()); },
          "The CUcontext as an int.")
      .def_property_readonly(
          "device", [](const context &self) { return device{self.device()}; },
          "The Device this context is on (Context.get_device() is the current context's).")
      .def_static(
          "_from_handle",
          [](std::uintptr_t handle) -> context_ptr {
            const auto h = reinterpret_cast<CUcontext>(handle);
            if (context_ptr known = find_context(h))
              return known;
            // Only the current context is known alive without a wrapper: asking the driver about
            // any other handle could touch a destroyed context.
            context_ptr now = h != nullptr ? context::current() : nullptr;
            return now && now->handle() == h ? now : nullptr;
          },
          py::arg("handle"),
          "The live Context object of a CUcontext handle (the current context's too); None when "
          "there is none (0, or a context no longer wrapped).")
      .def_property_readonly(
          "_cache_key",
          [](const context &self) {
            return py::make_tuple(reinterpret_cast<std::intptr_t>(self.handle()), self.serial());
          },
          "(handle, serial): what per-context caches key on (cuplug._driver.context_cache); a "
          "new context that got a destroyed one's handle has another serial.")
      .def_property_readonly("is_primary", &context::is_primary,
                             "Whether this is its device's primary context.")
      .def(
          "__eq__", [](const context &a, const context &b) { return a.handle() == b.handle(); },
          py::arg("other"))
      .def(
          "__eq__",
          [](const context &, py::handle) {
            return py::reinterpret_borrow<py::object>(Py_NotImplemented);
          },
          py::arg("other"))
      .def("__hash__",
           [](const context &self) {
             return py::hash(py::int_(reinterpret_cast<std::intptr_t>(self.handle())));
           })
      .def("__repr__",
           [](const context &self) {
             return py::str("<Context {:#x} on device {}{}{}>")
                 .format(reinterpret_cast<std::uintptr_t>(self.handle()), self.device(),
                         self.is_primary() ? ", primary" : "", self.valid() ? "" : ", detached");
           })
      .def(
          "__enter__",
          [](context &self) {
            self.push();
            return self.shared_from_this();
          },
          "`with ctx:` pushes ctx, and pops it when the block ends, exceptions included. Meant "
          "for contexts that are not pushed: retain_primary_context(), or one popped after "
          "make_context() (which pushes).")
      .def("__exit__", [](const context &self, const py::args &) {
        context_ptr top = context::current();
        if (!top || top->handle() != self.handle())
          throw cuda_error("context::__exit__", CUDA_ERROR_INVALID_CONTEXT,
                           "the context entered is no longer on top of this thread's stack (a "
                           "push inside the with-block was not popped)");
        context::pop();
        return false;
      });

  // Device's methods that make contexts are bound here, once Context exists: pybind11 writes a
  // signature's types when a method is bound, and these would otherwise name the C++ type.
  py::reinterpret_borrow<py::class_<device>>(m.attr("Device"))
      .def(
          "make_context",
          [](const device &dev, unsigned flags) { return context::create(dev.handle, flags); },
          py::arg("flags") = 0,
          "Creates a context on this device; it becomes current (pushed on this thread's "
          "stack)." CUPLUG_DOC_PARAMS "flags : int\n    ctx_flags, or-ed.\n" CUPLUG_DOC_RETURNS
          "Context\n    The new context.\n")
      .def(
          "retain_primary_context",
          [](const device &dev) { return context::retain_primary(dev.handle); },
          "The device's primary context, shared with the runtime API and other libraries. It is "
          "not pushed: call push() or use `with ctx:`.");
}

} // namespace cuplug::python
