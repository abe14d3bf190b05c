// Backend selection layers (explicit > environment > file > default) and per-plugin options.
#include <cuplug/config.hpp>
#include <cuplug/errors.hpp>

#include "path_trust.hpp"

#include <cctype>
#include <cstdlib>

namespace cuplug {
namespace {

std::string trimmed(const char *s) {
  std::string v = s == nullptr ? std::string() : std::string(s);
  const auto first = v.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    return {};
  const auto last = v.find_last_not_of(" \t\r\n");
  return v.substr(first, last - first + 1);
}

std::string options_key(plugin_kind kind, const std::string &name) {
  return std::string(to_string(kind)) + "." + name;
}

detail::trust_rule config_file_rule() {
  detail::trust_rule rule;
  rule.what = "config file";
  return rule;
}

// Why options from the file at `path` may not name programs or files to write; "" if they may.
std::string file_distrust(const std::string &path) {
  if (path.empty())
    return "a config file layer that names no file, so cuplug could not check who can change it";
  const detail::trusted_path checked = detail::open_trusted(path, config_file_rule());
  if (checked.problem.empty())
    return {};
  return "the config file " + path + ", which cuplug does not trust (" + checked.problem + ")";
}

} // namespace

const char *to_string(config_source source) noexcept {
  switch (source) {
  case config_source::explicit_call:
    return "explicit";
  case config_source::environment:
    return "environment";
  case config_source::config_file:
    return "config file";
  case config_source::builtin_default:
    return "built-in default";
  }
  return "unknown";
}

config &config::instance() {
  // Leaked on purpose: backend objects destroyed during process exit may still ask for it.
  static config *const the_config = new config();
  return *the_config;
}

selection config::selected(plugin_kind kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = explicit_.find(kind); it != explicit_.end())
    return {it->second, config_source::explicit_call, "cuplug.use()"};
  const std::string var = env_var(kind);
  // Read on every query, so a variable set after import still takes effect here (the cached
  // backends in backends.cpp read it once per configuration generation instead).
  if (std::string value = trimmed(std::getenv(var.c_str())); !value.empty())
    return {value, config_source::environment, var};
  if (auto it = file_.find(kind); it != file_.end())
    return {it->second, config_source::config_file, file_path_};
  return {builtin_default(kind), config_source::builtin_default, "built-in default"};
}

std::optional<std::string> config::set_explicit(plugin_kind kind, std::optional<std::string> name) {
  if (name && trimmed(name->c_str()).empty())
    throw config_error(std::string("empty ") + to_string(kind) +
                       " name: give a backend name, or None to clear the explicit choice");
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<std::string> previous;
  if (auto it = explicit_.find(kind); it != explicit_.end())
    previous = it->second;
  if (previous == name)
    return previous;
  if (name)
    explicit_[kind] = *name;
  else
    explicit_.erase(kind);
  __atomic_store_n(&generation_, generation_ + 1, __ATOMIC_RELEASE);
  return previous;
}

std::optional<std::string> config::explicit_choice(plugin_kind kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = explicit_.find(kind); it != explicit_.end())
    return it->second;
  return std::nullopt;
}

void config::set_file_layer(
    std::string path, std::map<plugin_kind, std::string> backends,
    std::map<std::string, std::map<std::string, std::string>> plugin_options) {
  // Checked here, not only by whoever parsed the file: trust is the core's decision.
  std::string distrust = file_distrust(path);
  std::lock_guard<std::mutex> lock(mutex_);
  file_distrust_ = std::move(distrust);
  file_path_ = std::move(path);
  file_ = std::move(backends);
  file_options_ = std::move(plugin_options);
  __atomic_store_n(&generation_, generation_ + 1, __ATOMIC_RELEASE);
}

void config::clear_file_layer() {
  std::lock_guard<std::mutex> lock(mutex_);
  file_path_.clear();
  file_distrust_.clear();
  file_.clear();
  file_options_.clear();
  __atomic_store_n(&generation_, generation_ + 1, __ATOMIC_RELEASE);
}

std::string config::file_path() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return file_path_;
}

int config::open_file(const std::string &path) {
  detail::trusted_path checked = detail::open_trusted(path, config_file_rule());
  if (!checked.problem.empty())
    throw config_error(checked.unsafe
                           ? checked.problem + "; cuplug does not read a config file someone else "
                                               "could change, since it chooses what this process "
                                               "loads and runs"
                           : checked.problem);
  return checked.fd.release();
}

options config::plugin_options(plugin_kind kind, const std::string &name,
                               const std::map<std::string, std::string> &overrides) const {
  const std::string key = options_key(kind, name);
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, std::string> values;
  std::map<std::string, std::string> distrusted;
  if (auto it = file_options_.find(key); it != file_options_.end()) {
    values = it->second;
    if (!file_distrust_.empty())
      for (const auto &[k, v] : it->second)
        distrusted[k] = file_distrust_;
  }
  // A value set again by a trusted layer is trusted.
  if (auto it = explicit_options_.find(key); it != explicit_options_.end())
    for (const auto &[k, v] : it->second) {
      values[k] = v;
      distrusted.erase(k);
    }
  for (const auto &[k, v] : overrides) {
    values[k] = v;
    distrusted.erase(k);
  }
  return options(std::move(values), std::move(distrusted));
}

void config::set_explicit_options(plugin_kind kind, const std::string &name,
                                  std::map<std::string, std::string> values) {
  const std::string key = options_key(kind, name);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = explicit_options_.find(key);
  if (values.empty()) {
    if (it == explicit_options_.end())
      return;
    explicit_options_.erase(it);
  } else {
    if (it != explicit_options_.end() && it->second == values)
      return;
    explicit_options_[key] = std::move(values);
  }
  __atomic_store_n(&generation_, generation_ + 1, __ATOMIC_RELEASE);
}

const char *config::builtin_default(plugin_kind kind) noexcept { return default_backend(kind); }

std::string config::env_var(plugin_kind kind) {
  std::string var = "CUPLUG_";
  for (const char *p = to_string(kind); *p != '\0'; ++p)
    var += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
  return var;
}

// Lock-free so the hot paths in backends.cpp can compare it on every call; it is written only
// under mutex_, with release order, after the change it announces.
unsigned long config::generation() const noexcept {
  return __atomic_load_n(&generation_, __ATOMIC_ACQUIRE);
}

} // namespace cuplug
