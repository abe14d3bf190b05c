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

} // namespace cuplug
