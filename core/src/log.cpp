// The log sink: one atomic pair of function pointers, the default writing warnings to stderr.
#include <cuplug/log.hpp>

#include <atomic>
#include <cstdio>

namespace cuplug {
namespace {

bool default_enabled(log_level level) noexcept { return level >= log_level::warning; }

void default_emit(log_level level, const char *message) noexcept {
  if (level >= log_level::warning)
    std::fprintf(stderr, "%s\n", message);
}

std::atomic<bool (*)(log_level) noexcept> enabled_fn{&default_enabled};
std::atomic<void (*)(log_level, const char *) noexcept> emit_fn{&default_emit};

} // namespace

log_sink set_log_sink(log_sink sink) noexcept {
  log_sink old{enabled_fn.load(), emit_fn.load()};
  enabled_fn.store(sink.enabled ? sink.enabled : &default_enabled);
  emit_fn.store(sink.emit ? sink.emit : &default_emit);
  return old;
}

bool log_enabled(log_level level) noexcept { return enabled_fn.load()(level); }

void log(log_level level, const std::string &message) noexcept {
  if (log_enabled(level))
    emit_fn.load()(level, message.c_str());
}

} // namespace cuplug
