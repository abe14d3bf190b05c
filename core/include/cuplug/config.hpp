// Backend selection: explicit call > environment > config file > built-in default.
#pragma once

#include <cuplug/options.hpp>
#include <cuplug/plugin_abi.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace cuplug {

enum class config_source { explicit_call, environment, config_file, builtin_default };
const char *to_string(config_source source) noexcept;

struct selection {
  std::string name;
  config_source source = config_source::builtin_default;
  std::string origin; // "cuplug.use()", "CUPLUG_ALLOCATOR", "/home/u/.config/cuplug/cuplug.toml"
};

// Process-wide configuration. The file layer is filled by whoever parses the TOML (the Python
// package, with tomllib); the environment layer is read from CUPLUG_<KIND> on every query.
class config {
public:
  static config &instance();

  selection selected(plugin_kind kind) const;
  // Sets (or with nullopt clears) the explicit choice; returns the previous explicit choice.
  std::optional<std::string> set_explicit(plugin_kind kind, std::optional<std::string> name);
  std::optional<std::string> explicit_choice(plugin_kind kind) const;

  // Installs a parsed config file. `path` is checked here with the same rule as plugins (see
  // docs/security.md): when it fails, or names no file, its choices still apply but options a
  // plugin reads as dangerous (get_program, get_output_path) are refused.
  void set_file_layer(std::string path, std::map<plugin_kind, std::string> backends,
                      std::map<std::string, std::map<std::string, std::string>> plugin_options);
  void clear_file_layer();
  std::string file_path() const;

  // Opens a config file for reading if cuplug may trust it: a regular file that nobody but root
  // and the current user could change (it, every folder on the way, every link followed).
  // Returns a descriptor the caller closes. Throws config_error naming the file and the
  // problem, and never blocks on a FIFO or device. The file's parser (the Python package)
  // reads through it.
  static int open_file(const std::string &path);

  // Options for "<kind>.<name>": file table overlaid with explicitly set options, then with
  // `overrides` (options a caller passes for one object, as trusted as explicit ones). Values
  // from a config file that failed the trust check are marked distrusted.
  options plugin_options(plugin_kind kind, const std::string &name,
                         const std::map<std::string, std::string> &overrides = {}) const;
  void set_explicit_options(plugin_kind kind, const std::string &name,
                            std::map<std::string, std::string> values);

  static const char *builtin_default(plugin_kind kind) noexcept;
  static std::string env_var(plugin_kind kind); // "CUPLUG_ALLOCATOR"

  // Bumped on every change; caches of created backends compare it.
  unsigned long generation() const noexcept;

private:
  config() = default;
  mutable std::mutex mutex_;
  std::map<plugin_kind, std::string> explicit_;
  std::map<plugin_kind, std::string> file_;
  std::string file_path_;
  // Why the file layer's dangerous options are refused ("" when the file passed the check).
  std::string file_distrust_;
  std::map<std::string, std::map<std::string, std::string>> file_options_;
  std::map<std::string, std::map<std::string, std::string>> explicit_options_;
  unsigned long generation_ = 0;
};

} // namespace cuplug
