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
class options {
public:
  options() = default;
  explicit options(std::map<std::string, std::string> values) : values_(std::move(values)) {}

  std::string get_string(const std::string &key, const std::string &fallback) const;
  long long get_int(const std::string &key, long long fallback) const;
  bool get_bool(const std::string &key, bool fallback) const;
  double get_double(const std::string &key, double fallback) const;
  // Byte sizes: "1048576", "64MiB", "1.5GiB", "512kB".
  std::size_t get_bytes(const std::string &key, std::size_t fallback) const;

  bool contains(const std::string &key) const { return values_.count(key) != 0; }
  const std::map<std::string, std::string> &values() const noexcept { return values_; }
  // Names the plugin asked for, whether or not they were set.
  const std::set<std::string> &known() const noexcept { return known_; }
  // Set keys the plugin never asked for.
  std::vector<std::string> unknown() const;

private:
  const std::string *find(const std::string &key) const;
  std::map<std::string, std::string> values_;
  mutable std::set<std::string> known_;
};

} // namespace cuplug
