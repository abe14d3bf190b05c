// cuplug's messages that are neither errors nor results: clean-up failures (warnings), what a
// compile is doing (info: a compile starts, and ends with its duration and cache outcome) and what
// the loader, backend selection and compile cache decided (debug). Each message belongs to a
// component; the Python package routes them to the loggers `cuplug` (general), `cuplug.compile`,
// `cuplug.memory`, `cuplug.plugins` and `cuplug.launch`. A C++ program gets warnings on stderr
// unless it installs its own sink.
#pragma once

#include <string>

namespace cuplug {

// Python logging's numbers, so that a sink can pass them on unchanged.
enum class log_level : int { debug = 10, info = 20, warning = 30, error = 40 };

// What a message is about; each one is a logger of its own in Python.
enum class log_component : int { general = 0, compile, memory, plugins, launch };
inline constexpr int log_component_count = 5;

// "" for general, else the component's name ("compile"): the Python logger is "cuplug" or
// "cuplug.<name>".
const char *to_string(log_component component) noexcept;

// Where messages go. `enabled` is asked before a debug message is even formatted; `emit` gets the
// message. Both must not throw and may be called from any thread, also from destructors.
struct log_sink {
  bool (*enabled)(log_component component, log_level level) noexcept = nullptr;
  void (*emit)(log_component component, log_level level, const char *message) noexcept = nullptr;
};

// Installs `sink` (a sink with null members restores the default: warnings and errors on stderr,
// debug and info dropped) and returns the previous one.
log_sink set_log_sink(log_sink sink) noexcept;

bool log_enabled(log_component component, log_level level) noexcept;
void log(log_component component, log_level level, const std::string &message) noexcept;

inline bool log_enabled(log_level level) noexcept {
  return log_enabled(log_component::general, level);
}
inline void log(log_level level, const std::string &message) noexcept {
  log(log_component::general, level, message);
}
inline void log_warning(const std::string &message) noexcept { log(log_level::warning, message); }
inline void log_warning(log_component component, const std::string &message) noexcept {
  log(component, log_level::warning, message);
}

// Holds back this thread's messages while it lives and passes them to the sink when the
// outermost one ends. A sink may call into Python, and Python may let the GIL go to a thread
// that then waits for a lock this thread holds: a deadlock. So a critical section that may log
// declares one of these before taking its lock (it then ends after the lock is released):
//   log_deferral deferred;
//   std::lock_guard<std::mutex> lock(mutex);
// The outermost one asks the sink once which levels are enabled, before the lock is taken;
// log_enabled() answers from that while it lives, without asking the sink again.
class log_deferral {
public:
  log_deferral() noexcept;
  ~log_deferral();
  log_deferral(const log_deferral &) = delete;
  log_deferral &operator=(const log_deferral &) = delete;
};

// The opposite promise: while one lives, this thread holds no lock at all (of the core, a
// plugin's, a pool's), so a sink may wait (for Python's GIL) to pass a message on now rather than
// queue it until the thread returns to Python. For messages that say what is starting (a compile
// that may take seconds), declared just around them:
//   { log_unlocked now; log(log_component::compile, log_level::info, "compiling ..."); }
// Without one, a sink must not wait. Inside a log_deferral it promises nothing.
class log_unlocked {
public:
  log_unlocked() noexcept;
  ~log_unlocked();
  log_unlocked(const log_unlocked &) = delete;
  log_unlocked &operator=(const log_unlocked &) = delete;
};

// True where a sink may wait: inside a log_unlocked and outside any log_deferral.
bool log_may_wait() noexcept;

} // namespace cuplug
