// Routes the core's log (cuplug/log.hpp) to Python's loggers: `cuplug` for general messages
// (clean-up warnings), `cuplug.compile`, `cuplug.memory`, `cuplug.plugins` and `cuplug.launch` for
// the components. Clean-up warnings reach logging (and pytest's, an application's handlers)
// instead of raw stderr; compiles (info), the loader's, backend selection's and compile cache's
// decisions (debug) show with logging's levels or CUPLUG_LOG (cuplug/_log.py). Once the
// interpreter is finalizing, the default sink's stderr takes over. A thread that does not hold the
// GIL waits for it only where the core says it holds no lock (log_may_wait(): a compile's start
// and end lines): elsewhere it may hold a lock of the core that a thread holding the GIL wants, so
// it goes by the logger's level as last seen, and its messages wait in a queue that the next
// thread holding the GIL passes on (flush_pending_log(), called where a GIL-free section such as a
// compile ends).
#include "bindings.hpp"
#include "driver/context.hpp"

#include <cuplug/log.hpp>

#include <atomic>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <tuple>

namespace cuplug::python {
namespace {

// logging.getLogger("cuplug") and its children, one per component; leaked on purpose.
PyObject *loggers[log_component_count] = {};
PyObject *get_effective_level = nullptr; // the method's name, interned once
// Each one's effective level, as last seen.
std::atomic<int> last_level[log_component_count];
std::mutex pending_mutex;
// From threads without the GIL.
std::deque<std::tuple<log_component, log_level, std::string>> pending;
constexpr std::size_t max_pending = 1000;

int index_of(log_component component) noexcept {
  const int i = static_cast<int>(component);
  return i >= 0 && i < log_component_count ? i : 0;
}

bool fallback_enabled(log_level level) noexcept { return level >= log_level::warning; }

bool python_alive() noexcept { return loggers[0] != nullptr && !interpreter_finalizing(); }

// Clears the error a call into logging raised. Calling Python code runs the handlers of signals
// that are pending (on the main thread): a Ctrl-C that arrives while a compile logs would raise
// its KeyboardInterrupt inside logging, and clearing it there would lose it, so the compile the
// user meant to stop would go on (the compile polls for the interrupt: init_compiler.cpp). The
// interrupt is raised again at the next check for signals instead.
void drop_logging_error() noexcept {
  const bool interrupt = PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) != 0;
  PyErr_Clear();
  if (interrupt)
    PyErr_SetInterrupt();
}

// Asks the logger for its level; the GIL is held. An exception already set (the
// KeyboardInterrupt that stopped a compile, which then logs its end) survives the call: Python
// code must not run with it set, and clearing it would lose it.
bool ask_logger(int i, log_level level) noexcept {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  // By an interned name, not a new string per call: every memory hit of the compile cache asks.
  PyObject *r = PyObject_CallMethodObjArgs(loggers[i], get_effective_level, nullptr);
  long effective = -1;
  if (r != nullptr) {
    effective = PyLong_AsLong(r);
    Py_DECREF(r);
  }
  const bool failed = r == nullptr || (effective == -1 && PyErr_Occurred());
  if (failed)
    drop_logging_error();
  PyErr_Restore(type, value, traceback);
  if (failed)
    return fallback_enabled(level);
  last_level[i].store(static_cast<int>(effective), std::memory_order_relaxed);
  return static_cast<int>(level) >= effective;
}

bool python_enabled(log_component component, log_level level) noexcept {
  const int i = index_of(component);
  if (python_alive()) {
    if (PyGILState_Check() == 1)
      return ask_logger(i, level);
    if (log_may_wait()) {
      PyGILState_STATE gil = PyGILState_Ensure();
      const bool on = ask_logger(i, level);
      PyGILState_Release(gil);
      return on;
    }
  }
  return static_cast<int>(level) >= last_level[i].load(std::memory_order_relaxed);
}

// Passes `message` to the logger; the GIL is held.
void to_logger(log_component component, log_level level, const char *message) noexcept {
  // The exception (if any) of the code that is being cleaned up survives the call.
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject *r = PyObject_CallMethod(loggers[index_of(component)], "log", "is",
                                    static_cast<int>(level), message);
  if (r == nullptr) {
    drop_logging_error();
    std::fprintf(stderr, "%s\n", message);
  }
  Py_XDECREF(r);
  PyErr_Restore(type, value, traceback);
}

void python_emit(log_component component, log_level level, const char *message) noexcept {
  if (!python_alive()) {
    if (level >= log_level::warning)
      std::fprintf(stderr, "%s\n", message);
    return;
  }
  if (PyGILState_Check() != 1) {
    if (log_may_wait()) {
      // This thread holds no lock: waiting for the GIL cannot deadlock, and the line (a compile
      // that starts) is seen now rather than once the compile has returned.
      PyGILState_STATE gil = PyGILState_Ensure();
      flush_pending_log();
      to_logger(component, level, message);
      PyGILState_Release(gil);
      return;
    }
    try {
      std::lock_guard<std::mutex> lock(pending_mutex);
      if (pending.size() < max_pending) {
        pending.emplace_back(component, level, message);
        return;
      }
    } catch (...) {
    }
    if (level >= log_level::warning)
      std::fprintf(stderr, "%s\n", message);
    return;
  }
  flush_pending_log();
  to_logger(component, level, message);
}

} // namespace

void flush_pending_log() noexcept {
  if (!python_alive() || PyGILState_Check() != 1)
    return;
  std::deque<std::tuple<log_component, log_level, std::string>> taken;
  try {
    std::lock_guard<std::mutex> lock(pending_mutex);
    taken.swap(pending);
  } catch (...) {
    return;
  }
  for (const auto &[component, level, message] : taken)
    to_logger(component, level, message.c_str());
}

void init_python_log(py::module_ &) {
  get_effective_level = PyUnicode_InternFromString("getEffectiveLevel");
  if (get_effective_level == nullptr)
    throw py::error_already_set();
  py::object get_logger = py::module_::import("logging").attr("getLogger");
  for (int i = 0; i < log_component_count; ++i) {
    const std::string name = std::string(to_string(static_cast<log_component>(i)));
    last_level[i].store(static_cast<int>(log_level::warning), std::memory_order_relaxed);
    loggers[i] =
        get_logger(name.empty() ? std::string("cuplug") : "cuplug." + name).release().ptr();
  }
  set_log_sink(log_sink{&python_enabled, &python_emit});
}

} // namespace cuplug::python
