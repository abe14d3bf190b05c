// The log sink: one atomic pair of function pointers, the default writing warnings to stderr;
// and log_deferral, which holds a thread's messages back until it has released its locks.
#include <cuplug/log.hpp>

#include <atomic>
#include <cstdio>
#include <utility>
#include <vector>

namespace cuplug {
namespace {

bool default_enabled(log_level level) noexcept { return level >= log_level::warning; }

void default_emit(log_level level, const char *message) noexcept {
  if (level >= log_level::warning)
    std::fprintf(stderr, "%s\n", message);
}

std::atomic<bool (*)(log_level) noexcept> enabled_fn{&default_enabled};
std::atomic<void (*)(log_level, const char *) noexcept> emit_fn{&default_emit};

// This thread's log_deferral: how deep, the levels enabled when the outermost began, and the
// messages held back.
struct deferred_log {
  int depth = 0;
  bool enabled[4] = {};
  std::vector<std::pair<log_level, std::string>> held;
};
thread_local deferred_log deferred;

constexpr log_level levels[4] = {log_level::debug, log_level::info, log_level::warning,
                                 log_level::error};

int level_index(log_level level) noexcept {
  for (int i = 3; i > 0; --i)
    if (static_cast<int>(level) >= static_cast<int>(levels[i]))
      return i;
  return 0;
}

} // namespace

log_sink set_log_sink(log_sink sink) noexcept {
  log_sink old{enabled_fn.load(), emit_fn.load()};
  enabled_fn.store(sink.enabled ? sink.enabled : &default_enabled);
  emit_fn.store(sink.emit ? sink.emit : &default_emit);
  return old;
}

bool log_enabled(log_level level) noexcept {
  if (deferred.depth > 0)
    return deferred.enabled[level_index(level)];
  return enabled_fn.load()(level);
}

void log(log_level level, const std::string &message) noexcept {
  if (!log_enabled(level))
    return;
  if (deferred.depth > 0) {
    try {
      deferred.held.emplace_back(level, message);
      return;
    } catch (...) {
      // No memory to hold it: the default sink's stderr, which takes no lock of ours.
      default_emit(level, message.c_str());
      return;
    }
  }
  emit_fn.load()(level, message.c_str());
}

log_deferral::log_deferral() noexcept {
  if (deferred.depth++ > 0)
    return;
  for (int i = 0; i < 4; ++i)
    deferred.enabled[i] = enabled_fn.load()(levels[i]);
}

log_deferral::~log_deferral() {
  if (--deferred.depth > 0)
    return;
  std::vector<std::pair<log_level, std::string>> held;
  held.swap(deferred.held);
  for (const auto &[level, message] : held)
    emit_fn.load()(level, message.c_str());
}

} // namespace cuplug
