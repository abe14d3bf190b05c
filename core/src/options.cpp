// Typed reads of plugin options, with errors that name the option and the bad value.
#include <cuplug/errors.hpp>
#include <cuplug/options.hpp>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace cuplug {
namespace {

[[noreturn]] void bad_value(const std::string &key, const std::string &value, const char *want) {
  throw config_error("option '" + key + "' has value '" + value + "', expected " + want);
}

std::string lower(std::string s) {
  for (auto &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string &s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

} // namespace

const std::string *options::find(const std::string &key) const {
  known_.insert(key);
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

std::string options::get_string(const std::string &key, const std::string &fallback) const {
  const auto *v = find(key);
  return v ? *v : fallback;
}

long long options::get_int(const std::string &key, long long fallback) const {
  const auto *v = find(key);
  if (!v)
    return fallback;
  const std::string s = trim(*v);
  char *end = nullptr;
  errno = 0;
  long long out = std::strtoll(s.c_str(), &end, 0);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    bad_value(key, *v, "an integer");
  return out;
}

bool options::get_bool(const std::string &key, bool fallback) const {
  const auto *v = find(key);
  if (!v)
    return fallback;
  const std::string s = lower(trim(*v));
  if (s == "1" || s == "true" || s == "yes" || s == "on")
    return true;
  if (s == "0" || s == "false" || s == "no" || s == "off")
    return false;
  bad_value(key, *v, "a boolean (true/false, 1/0, yes/no, on/off)");
}

double options::get_double(const std::string &key, double fallback) const {
  const auto *v = find(key);
  if (!v)
    return fallback;
  const std::string s = trim(*v);
  char *end = nullptr;
  double out = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(out))
    bad_value(key, *v, "a number");
  return out;
}

std::size_t options::get_bytes(const std::string &key, std::size_t fallback) const {
  const auto *v = find(key);
  if (!v)
    return fallback;
  const std::string s = trim(*v);
  char *end = nullptr;
  double number = std::strtod(s.c_str(), &end);
  std::string unit = lower(trim(std::string(end)));
  double scale = 0;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "kb")
    scale = 1e3;
  else if (unit == "mb")
    scale = 1e6;
  else if (unit == "gb")
    scale = 1e9;
  else if (unit == "tb")
    scale = 1e12;
  else if (unit == "kib" || unit == "k")
    scale = 1024.0;
  else if (unit == "mib" || unit == "m")
    scale = 1024.0 * 1024;
  else if (unit == "gib" || unit == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "tib" || unit == "t")
    scale = 1024.0 * 1024 * 1024 * 1024;
  if (s.empty() || end == s.c_str() || scale == 0 || !(number >= 0) || !std::isfinite(number))
    bad_value(key, *v, "a byte size such as 1048576, 64MiB or 1.5GiB");
  return static_cast<std::size_t>(std::llround(number * scale));
}

std::string options::trusted_string(const std::string &key, const std::string &fallback,
                                    const char *names) const {
  const auto *v = find(key);
  if (!v)
    return fallback;
  if (auto it = distrusted_.find(key); it != distrusted_.end())
    throw config_error("option '" + key + "' names " + names + ", but its value '" + *v +
                       "' was set by " + it->second +
                       ": set it with cuplug.use(...) or in a config file only you and root can "
                       "change");
  return *v;
}

std::string options::get_program(const std::string &key, const std::string &fallback) const {
  return trusted_string(key, fallback, "a program to run");
}

std::string options::get_output_path(const std::string &key, const std::string &fallback) const {
  return trusted_string(key, fallback, "a file to write");
}

void options::distrust(const std::string &key, std::string why) {
  distrusted_[key] = std::move(why);
}

std::vector<std::string> options::unknown() const {
  std::vector<std::string> out;
  for (const auto &kv : values_)
    if (!known_.count(kv.first))
      out.push_back(kv.first);
  return out;
}

} // namespace cuplug
