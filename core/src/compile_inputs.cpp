// Recording what a compile read (content hashes and stat fields) and checking it is unchanged.
#include "compile_inputs.hpp"

#include "compile_cache_detail.hpp"

#include <cuplug/compile_cache.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

namespace cuplug {
namespace {
using detail::ctime_ns;
using detail::mtime_ns;
using detail::read_regular_file;
using detail::read_status;

constexpr std::size_t max_input_bytes = std::size_t(64) << 20;
constexpr long long second_ns = 1000000000LL;
// File times come from a clock that lags the wall clock by up to a scheduler tick; a write that
// far before the compile began may still be stamped later than an unrelated earlier one.
constexpr long long clock_slack_ns = 50 * 1000000LL;

std::string env_value(const std::string &name) {
  const char *v = std::getenv(name.c_str());
  return v ? v : "";
}

bool same_stat(const file_record &f, const struct stat &st) {
  return static_cast<long long>(st.st_size) == f.size && mtime_ns(st) == f.mtime_ns &&
         ctime_ns(st) == f.ctime_ns && static_cast<unsigned long long>(st.st_ino) == f.ino &&
         static_cast<unsigned long long>(st.st_dev) == f.dev;
}

// Written at or after `limit`? A time with no sub-second part comes from a file system that keeps
// whole seconds, so anything in the second of the limit counts.
bool written_since(long long t, long long limit) {
  if (t % second_ns == 0)
    limit -= limit % second_ns;
  return t >= limit;
}

bool absent_now(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
}

} // namespace

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool record_inputs(const compile_inputs &inputs, long long started_ns, recorded_inputs &out,
                   std::string &why) {
  out = {};
  if (!inputs.known) {
    why = inputs.unknown_reason.empty() ? "the compiler does not say which files it read"
                                        : inputs.unknown_reason;
    return false;
  }
  for (const auto &[name, value] : inputs.environment) {
    if (env_value(name) != value) {
      why = "$" + name + " changed while compiling";
      return false;
    }
    out.environment.emplace_back(name, value);
  }
  const long long limit = started_ns - clock_slack_ns;
  for (const auto &path : inputs.files) {
    std::string content;
    struct stat before {
    }, after{};
    read_status r = read_regular_file(path, max_input_bytes, content, before);
    if (r != read_status::ok) {
      why = path + (r == read_status::too_large     ? " is larger than 64 MiB"
                    : r == read_status::not_regular ? " is not a regular file"
                                                    : " cannot be read");
      return false;
    }
    if (::stat(path.c_str(), &after) != 0 || before.st_ino != after.st_ino ||
        mtime_ns(before) != mtime_ns(after) || before.st_size != after.st_size ||
        written_since(mtime_ns(after), limit)) {
      why = path + " was written while compiling";
      return false;
    }
    file_record f;
    f.path = path;
    f.sha256 = sha256_hex(content);
    f.size = static_cast<long long>(after.st_size);
    f.mtime_ns = mtime_ns(after);
    f.ctime_ns = ctime_ns(after);
    f.ino = static_cast<unsigned long long>(after.st_ino);
    f.dev = static_cast<unsigned long long>(after.st_dev);
    out.files.push_back(std::move(f));
  }
  for (const auto &path : inputs.absent) {
    if (!absent_now(path)) {
      why = path + " appeared while compiling";
      return false;
    }
    out.absent.push_back(path);
  }
  return true;
}

bool inputs_unchanged(const recorded_inputs &recorded) {
  for (const auto &[name, value] : recorded.environment)
    if (env_value(name) != value)
      return false;
  for (const auto &path : recorded.absent)
    if (!absent_now(path))
      return false;
  for (const auto &f : recorded.files) {
    struct stat st {};
    if (::stat(f.path.c_str(), &st) != 0 || static_cast<long long>(st.st_size) != f.size)
      return false;
    if (same_stat(f, st))
      continue;
    std::string content;
    if (read_regular_file(f.path, max_input_bytes, content, st) != read_status::ok ||
        sha256_hex(content) != f.sha256)
      return false;
  }
  return true;
}

void hash_inputs(sha256 &h, const recorded_inputs &recorded) {
  h.field(std::to_string(recorded.environment.size()));
  for (const auto &[name, value] : recorded.environment) {
    h.field(name);
    h.field(value);
  }
  h.field(std::to_string(recorded.files.size()));
  for (const auto &f : recorded.files) {
    h.field(f.path);
    h.field(f.sha256);
  }
  h.field(std::to_string(recorded.absent.size()));
  for (const auto &a : recorded.absent)
    h.field(a);
}

compile_inputs as_compile_inputs(const recorded_inputs &recorded) {
  compile_inputs in;
  in.known = true;
  for (const auto &[name, value] : recorded.environment)
    in.environment[name] = value;
  for (const auto &f : recorded.files)
    in.files.push_back(f.path);
  in.absent = recorded.absent;
  return in;
}

} // namespace cuplug
