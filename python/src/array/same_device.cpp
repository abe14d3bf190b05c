// Mixed-device checks for array operations (reductions, scans, RNG and kernels built on arrays
// call _check_same_device; the elementwise engine checks inline).
#include "array/same_device.hpp"

#include "driver/context_lookup.hpp"

#include <cstdint>
#include <cstdio>

namespace cuplug::python::array {

std::string describe_context(CUcontext c) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(c)));
  // The live wrapper knows its device; no driver call on a handle that may be destroyed.
  if (context_ptr ctx = c != nullptr ? find_context(c) : nullptr)
    return "device " + std::to_string(ctx->device()) + " (context " + text + ")";
  return std::string("context ") + text + " (no longer wrapped: device unknown)";
}

void throw_mixed_devices(const std::string &routine, const std::string &argument,
                         CUcontext array_ctx, CUcontext here) {
  // Two contexts of one device: naming the device twice ("on device 0 ..., but the current
  // context is on device 0") would hide that it is the context that differs.
  context_ptr mine = array_ctx != nullptr ? find_context(array_ctx) : nullptr;
  context_ptr current_ctx = here != nullptr ? find_context(here) : nullptr;
  if (mine && current_ctx && mine->device() == current_ctx->device())
    throw py::value_error(
        routine + ": argument '" + argument + "' belongs to " + describe_context(array_ctx) +
        ", but the current context is another context of the same device (" +
        describe_context(here) +
        "): memory belongs to the context it was allocated in; make that context current "
        "(ctx.push(), or with ctx:) to use it");
  std::string where = describe_context(array_ctx);
  std::string current = here != nullptr ? describe_context(here) : std::string("no context");
  throw py::value_error(routine + ": argument '" + argument + "' is on " + where +
                        ", but the current context is on " + current +
                        ": operations take arrays of one device; make the array's device "
                        "current (with Device(n).retain_primary_context():) or copy it with "
                        "copy_to()");
}

void check_same_context(const std::string &routine, py::handle args, CUcontext here) {
  Py_ssize_t index = 0;
  for (py::handle item : args) {
    if (is_array(item.ptr())) {
      const array_object *a = as_array(item.ptr());
      // Freed memory or a destroyed context first: its handle may be reused by another.
      data_ptr(a);
      if (a->ctx != nullptr && a->ctx != here)
        throw_mixed_devices(routine, "#" + std::to_string(index), a->ctx, here);
    }
    ++index;
  }
}

void init_same_device(py::module_ &m) {
  m.def(
      "_check_same_device",
      [](const std::string &routine, py::args arrays) {
        check_same_context(routine, arrays, current_context_handle());
      },
      py::arg("routine"),
      "Raises ValueError naming both devices when an array among `arrays` belongs to another "
      "context than the current one (non-arrays are skipped).");
  m.def(
      "_describe_context",
      [](std::uintptr_t handle) { return describe_context(reinterpret_cast<CUcontext>(handle)); },
      py::arg("handle"), "'device N (context 0x...)' for a context handle.");
}

} // namespace cuplug::python::array
