// The plugin registry: the table of loaded plugins and in-process backends, and what became of
// each candidate file (found by core/src/registry_discovery.cpp, checked by the loader).
#pragma once

#include <cuplug/plugin.hpp>
#include <cuplug/plugin_abi.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cuplug {

// One candidate file and what became of it.
struct plugin_candidate {
  enum class state { loaded, rejected, duplicate };
  std::string path;
  state outcome = state::rejected;
  std::string reason;         // why rejected / which path it duplicates; empty when loaded
  plugin_manifest manifest{}; // zeroed when the manifest could not be read
  bool has_manifest = false;
};
const char *to_string(plugin_candidate::state s) noexcept;

// A plugin that passed the handshake. The library stays loaded for the life of the process.
struct plugin_info {
  std::string name;
  plugin_kind kind;
  std::string path;
  std::string description;
  std::string version;
  std::string abi_tag;
  std::string source; // "explicit", "CUPLUG_PLUGIN_PATH", "package", "builtin"
};

class plugin_library; // defined in the loader; keeps the shared library open
class allocator;

// Objects made by a plugin: destroyed by the plugin's own destroy(), and hold its library.
template <class T> using plugin_ptr = std::shared_ptr<T>;

class registry {
public:
  // The process-wide registry. On first use it scans CUPLUG_PLUGIN_PATH (absolute paths only;
  // relative entries are rejected with a diagnostic) and then the package's plugin folder.
  static registry &instance();

  // Loads one plugin file, or every lib*.so in a folder; returns what happened to each file.
  // Never throws for a bad candidate: the reason is in the result and in diagnostics().
  std::vector<plugin_candidate> load(const std::string &path,
                                     const std::string &source = "explicit");

  std::vector<plugin_info> available() const;
  std::vector<plugin_info> available(plugin_kind kind) const;
  std::vector<plugin_candidate> diagnostics() const;
  // Names of loaded plugins of a kind, sorted (for "available: ..." messages).
  std::vector<std::string> names(plugin_kind kind) const;
  bool has(plugin_kind kind, const std::string &name) const;
  plugin_info info(plugin_kind kind, const std::string &name) const;

  // Creates an object of plugin `name`. Throws config_error for an unknown name (listing what
  // exists) or unknown options (listing what the plugin accepts), plugin_error when the factory
  // throws or returns an object of the wrong kind.
  plugin_ptr<plugin_object> create(plugin_kind kind, const std::string &name, const options &opts);
  template <class T>
  plugin_ptr<T> create(plugin_kind kind, const std::string &name, const options &opts) {
    return std::static_pointer_cast<T>(create(kind, name, opts));
  }

  // Creates allocator `name` as an adaptor over the object `upstream`, which it draws from instead
  // of the backend its `upstream` option names: an allocator plugin that calls
  // pool::make_upstream in its constructor (pool, limiting, logging, ...) is handed `upstream`
  // there. Otherwise as create(); config_error when `upstream` is null or the plugin never asked
  // for an upstream (it is not an adaptor).
  plugin_ptr<allocator> create_adaptor(const std::string &name, const options &opts,
                                       plugin_ptr<allocator> upstream);

  // Registers an object factory that lives in this process (Python-defined allocators, tests).
  using factory = std::function<plugin_object *(const options &)>;
  void add_builtin(plugin_kind kind, const std::string &name, const std::string &description,
                   factory make);

  // Folder the core looks in for the package's own plugins.
  static std::string package_plugin_dir();

  // Bumped whenever a name comes to mean another plugin (a load that supersedes one, add_builtin
  // replacing one); caches of objects made by name compare it. Lock-free, and does not scan.
  static unsigned long generation() noexcept;

  registry(const registry &) = delete;
  registry &operator=(const registry &) = delete;

private:
  registry();
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace cuplug
