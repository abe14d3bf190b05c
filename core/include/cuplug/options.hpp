// Per-plugin options: string values from config or Python, read with typed getters.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace cuplug {

// A plugin reads its options in its constructor; the core then rejects any option the plugin
// did not read ("unknown option 'x' for allocator 'pool'; it accepts: a, b"). Bad values throw
// config_error naming the option, the value and what was expected.
//
// Options that name a program to run or a file to write are read with get_program and
// get_output_path: that is how a plugin declares them dangerous. A value that a source cuplug
// does not trust set (a config file someone else could change; see docs/security.md) is then
// refused, so such a source can never choose what this process runs or overwrites.
class options {
public:
  options() = default;
  explicit options(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  // `distrusted`: keys set by sources cuplug does not trust, each with why (see distrust()).
  options(std::map<std::string, std::string> values, std::map<std::string, std::string> distrusted)
      : values_(std::move(values)), distrusted_(std::move(distrusted)) {}

  std::string get_string(const std::string &key, const std::string &fallback) const;
  long long get_int(const std::string &key, long long fallback) const;
  bool get_bool(const std::string &key, bool fallback) const;
  double get_double(const std::string &key, double fallback) const;
  // Byte sizes: "1048576", "64MiB", "1.5GiB", "512kB".
  std::size_t get_bytes(const std::string &key, std::size_t fallback) const;
  // A program this process will run (a compiler's path) / a file it will create or truncate
  // (a log). Throw config_error when the value came from a source cuplug does not trust.
  std::string get_program(const std::string &key, const std::string &fallback) const;
  std::string get_output_path(const std::string &key, const std::string &fallback) const;

  // Marks `key` as set by a source cuplug does not trust; `why` names the source and says why
  // ("the config file /x/cuplug.toml, which cuplug does not trust (...)").
  void distrust(const std::string &key, std::string why);
  const std::map<std::string, std::string> &distrusted() const noexcept { return distrusted_; }

  bool contains(const std::string &key) const { return values_.count(key) != 0; }
  const std::map<std::string, std::string> &values() const noexcept { return values_; }
  // Names the plugin asked for, whether or not they were set.
  const std::set<std::string> &known() const noexcept { return known_; }
  // Set keys the plugin never asked for.
  std::vector<std::string> unknown() const;

private:
  const std::string *find(const std::string &key) const;
  std::string trusted_string(const std::string &key, const std::string &fallback,
                             const char *names) const;
  std::map<std::string, std::string> values_;
  mutable std::set<std::string> known_;
  // Last, so plugins built before it still find the members above where they were.
  std::map<std::string, std::string> distrusted_;
};

} // namespace cuplug
