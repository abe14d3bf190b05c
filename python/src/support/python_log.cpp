// Routes the core's log (cuplug/log.hpp) to Python's `cuplug` logger: clean-up warnings reach
// logging (and pytest's, an application's handlers) instead of raw stderr, and the loader's,
// backend selection's and compile cache's decisions show with
// logging.getLogger("cuplug").setLevel(logging.DEBUG). Once the interpreter is finalizing, the
// default sink's stderr takes over. A thread that does not hold the GIL never waits for it here
// (it may hold a lock of the core that a thread holding the GIL wants): it goes by the logger's
// level as last seen, and its messages wait in a queue that the next thread holding the GIL
// passes on (flush_pending_log(), called where a GIL-free section such as a compile ends).
#include "bindings.hpp"
#include "driver/context.hpp"

#include <cuplug/log.hpp>

#include <atomic>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

namespace cuplug::python {
namespace {

PyObject *logger = nullptr; // logging.getLogger("cuplug"), leaked on purpose
std::atomic<int> last_level{static_cast<int>(log_level::warning)}; // its effective level
std::mutex pending_mutex;
std::deque<std::pair<log_level, std::string>> pending; // from threads without the GIL
constexpr std::size_t max_pending = 1000;

bool fallback_enabled(log_level level) noexcept { return level >= log_level::warning; }

bool python_usable() noexcept {
  return logger != nullptr && !interpreter_finalizing() && PyGILState_Check() == 1;
}

bool python_enabled(log_level level) noexcept {
  if (!python_usable())
    return static_cast<int>(level) >= last_level.load(std::memory_order_relaxed);
  PyObject *r = PyObject_CallMethod(logger, "getEffectiveLevel", nullptr);
  if (r == nullptr) {
    PyErr_Clear();
    return fallback_enabled(level);
  }
  const long effective = PyLong_AsLong(r);
  Py_DECREF(r);
  if (effective == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return fallback_enabled(level);
  }
  last_level.store(static_cast<int>(effective), std::memory_order_relaxed);
  return static_cast<int>(level) >= effective;
}

// Passes `message` to the logger; the GIL is held.
void to_logger(log_level level, const char *message) noexcept {
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
}

void python_emit(log_level level, const char *message) noexcept {
  if (logger == nullptr || interpreter_finalizing()) {
    if (level >= log_level::warning)
      std::fprintf(stderr, "%s\n", message);
    return;
  }
  if (PyGILState_Check() != 1) {
    try {
      std::lock_guard<std::mutex> lock(pending_mutex);
      if (pending.size() < max_pending) {
        pending.emplace_back(level, message);
        return;
      }
    } catch (...) {
    }
    if (level >= log_level::warning)
      std::fprintf(stderr, "%s\n", message);
    return;
  }
  flush_pending_log();
  to_logger(level, message);
}

} // namespace

void flush_pending_log() noexcept {
  if (logger == nullptr || interpreter_finalizing() || PyGILState_Check() != 1)
    return;
  std::deque<std::pair<log_level, std::string>> taken;
  try {
    std::lock_guard<std::mutex> lock(pending_mutex);
    taken.swap(pending);
  } catch (...) {
    return;
  }
  for (const auto &[level, message] : taken)
    to_logger(level, message.c_str());
}

void init_python_log(py::module_ &) {
  logger = py::module_::import("logging").attr("getLogger")("cuplug").release().ptr();
  set_log_sink(log_sink{&python_enabled, &python_emit});
}

} // namespace cuplug::python
