// The log sink: one atomic pair of function pointers, the default writing warnings to stderr;
// log_deferral, which holds a thread's messages back until it has released its locks; and
// log_unlocked, which tells the sink that this thread may wait.
#include <cuplug/log.hpp>

#include <atomic>
#include <cstdio>
#include <tuple>
#include <vector>

namespace cuplug {
namespace {

bool default_enabled(log_component, log_level level) noexcept {
  return level >= log_level::warning;
}

void default_emit(log_component, log_level level, const char *message) noexcept {
  if (level >= log_level::warning)
    std::fprintf(stderr, "%s\n", message);
}

std::atomic<bool (*)(log_component, log_level) noexcept> enabled_fn{&default_enabled};
std::atomic<void (*)(log_component, log_level, const char *) noexcept> emit_fn{&default_emit};

constexpr int level_count = 4;
constexpr log_level levels[level_count] = {log_level::debug, log_level::info, log_level::warning,
                                           log_level::error};

// This thread's log_deferral: how deep, the levels enabled (per component) when the outermost
// began, and the messages held back.
struct deferred_log {
  int depth = 0;
  bool enabled[log_component_count][level_count] = {};
  std::vector<std::tuple<log_component, log_level, std::string>> held;
};
thread_local deferred_log deferred;
thread_local int unlocked_depth = 0;

int level_index(log_level level) noexcept {
  for (int i = level_count - 1; i > 0; --i)
    if (static_cast<int>(level) >= static_cast<int>(levels[i]))
      return i;
  return 0;
}

int component_index(log_component component) noexcept {
  const int i = static_cast<int>(component);
  return i >= 0 && i < log_component_count ? i : 0;
}

} // namespace

const char *to_string(log_component component) noexcept {
  switch (component) {
  case log_component::general:
    return "";
  case log_component::compile:
    return "compile";
  case log_component::memory:
    return "memory";
  case log_component::plugins:
    return "plugins";
  case log_component::launch:
    return "launch";
  }
  return "";
}

log_sink set_log_sink(log_sink sink) noexcept {
  log_sink old{enabled_fn.load(), emit_fn.load()};
  enabled_fn.store(sink.enabled ? sink.enabled : &default_enabled);
  emit_fn.store(sink.emit ? sink.emit : &default_emit);
  return old;
}

bool log_enabled(log_component component, log_level level) noexcept {
  if (deferred.depth > 0)
    return deferred.enabled[component_index(component)][level_index(level)];
  return enabled_fn.load()(component, level);
}

void log(log_component component, log_level level, const std::string &message) noexcept {
  if (!log_enabled(component, level))
    return;
  if (deferred.depth > 0) {
    try {
      deferred.held.emplace_back(component, level, message);
      return;
    } catch (...) {
      // No memory to hold it: the default sink's stderr, which takes no lock of ours.
      default_emit(component, level, message.c_str());
      return;
    }
  }
  emit_fn.load()(component, level, message.c_str());
}

log_deferral::log_deferral() noexcept {
  if (deferred.depth++ > 0)
    return;
  for (int c = 0; c < log_component_count; ++c)
    for (int i = 0; i < level_count; ++i)
      deferred.enabled[c][i] = enabled_fn.load()(static_cast<log_component>(c), levels[i]);
}

log_deferral::~log_deferral() {
  if (--deferred.depth > 0)
    return;
  std::vector<std::tuple<log_component, log_level, std::string>> held;
  held.swap(deferred.held);
  for (const auto &[component, level, message] : held)
    emit_fn.load()(component, level, message.c_str());
}

log_unlocked::log_unlocked() noexcept { ++unlocked_depth; }
log_unlocked::~log_unlocked() { --unlocked_depth; }

bool log_may_wait() noexcept { return unlocked_depth > 0 && deferred.depth == 0; }

} // namespace cuplug
