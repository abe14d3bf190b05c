// cuplug's messages that are neither errors nor results: clean-up failures (warnings) and what the
// loader, backend selection and compile cache decided (debug). The Python package routes them to
// the `cuplug` logger; a C++ program gets warnings on stderr unless it installs its own sink.
#pragma once

#include <string>

namespace cuplug {

// Python logging's numbers, so that a sink can pass them on unchanged.
enum class log_level : int { debug = 10, info = 20, warning = 30, error = 40 };

// Where messages go. `enabled` is asked before a debug message is even formatted; `emit` gets the
// message. Both must not throw and may be called from any thread, also from destructors.
struct log_sink {
  bool (*enabled)(log_level level) noexcept = nullptr;
  void (*emit)(log_level level, const char *message) noexcept = nullptr;
};

// Installs `sink` (a sink with null members restores the default: warnings and errors on stderr,
// debug and info dropped) and returns the previous one.
log_sink set_log_sink(log_sink sink) noexcept;

bool log_enabled(log_level level) noexcept;
void log(log_level level, const std::string &message) noexcept;

inline void log_warning(const std::string &message) noexcept { log(log_level::warning, message); }

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

} // namespace cuplug
