// Routes the core's log (cuplug/log.hpp) to Python's `cuplug` logger: clean-up warnings reach
// logging (and pytest's, an application's handlers) instead of raw stderr, and the loader's,
// backend selection's and compile cache's decisions show with
// logging.getLogger("cuplug").setLevel(logging.DEBUG). Once the interpreter is finalizing, the
// default sink's stderr takes over.
#include "bindings.hpp"
#include "driver/context.hpp"

#include <cuplug/log.hpp>

#include <cstdio>

namespace cuplug::python {
namespace {

PyObject *logger = nullptr; // logging.getLogger("cuplug"), leaked on purpose

bool fallback_enabled(log_level level) noexcept { return level >= log_level::warning; }

bool python_enabled(log_level level) noexcept {
  if (logger == nullptr || interpreter_finalizing())
    return fallback_enabled(level);
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject *r = PyObject_CallMethod(logger, "isEnabledFor", "i", static_cast<int>(level));
  bool on = fallback_enabled(level);
  if (r != nullptr) {
    on = PyObject_IsTrue(r) == 1;
    Py_DECREF(r);
  } else {
    PyErr_Clear();
  }
  PyGILState_Release(gil);
  return on;
}

void python_emit(log_level level, const char *message) noexcept {
  if (logger == nullptr || interpreter_finalizing()) {
    if (level >= log_level::warning)
      std::fprintf(stderr, "%s\n", message);
    return;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  // The exception (if any) of the code that is being cleaned up survives the call.
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject *r = PyObject_CallMethod(logger, "log", "is", static_cast<int>(level), message);
  if (r == nullptr) {
    PyErr_Clear();
    std::fprintf(stderr, "%s\n", message);
  }
  Py_XDECREF(r);
  PyErr_Restore(type, value, traceback);
  PyGILState_Release(gil);
}

} // namespace

void init_python_log(py::module_ &) {
  logger = py::module_::import("logging").attr("getLogger")("cuplug").release().ptr();
  set_log_sink(log_sink{&python_enabled, &python_emit});
}

} // namespace cuplug::python
