// The plugin registry: discovery order, the table of loaded backends, duplicates, create().
#include <cuplug/allocator.hpp>
#include <cuplug/backends.hpp>
#include <cuplug/compiler.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/interop.hpp>
#include <cuplug/launcher.hpp>
#include <cuplug/registry.hpp>
#include <cuplug/rng.hpp>

#include "plugin_loader.hpp"

#include <boost/core/demangle.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <typeinfo>

// Whether a file may be trusted and how it is opened lives in plugin_loader.cpp; this file
// decides which of the loaded plugins answers to a name.

namespace fs = std::filesystem;

namespace cuplug {

using detail::field_string;
using detail::join;
using detail::known_kind;
using detail::terminated;
using detail::valid_name;

namespace {

// Explicit paths win over CUPLUG_PLUGIN_PATH, which wins over the package's own folder.
int source_rank(const std::string &source) {
  if (source == "CUPLUG_PLUGIN_PATH")
    return 1;
  if (source == "package")
    return 2;
  return 0; // "explicit", "builtin"
}

// The interface class of each kind has the kind's name (plugin_kinds.hpp).
bool is_kind(plugin_object *object, plugin_kind kind) {
  switch (kind) {
#define CUPLUG_KIND_CASE(name, id, version, default_backend)                                       \
  case plugin_kind::name:                                                                          \
    return dynamic_cast<name *>(object) != nullptr;
    CUPLUG_PLUGIN_KINDS(CUPLUG_KIND_CASE)
#undef CUPLUG_KIND_CASE
  }
  return false;
}

// A registered backend: a loaded plugin library or an in-process factory.
struct entry {
  plugin_info info;
  int rank = 0;
  std::shared_ptr<plugin_library> library; // null for builtins
  registry::factory builtin;

  std::string provider() const {
    return library ? info.path + " (" + info.source + ")" : "a built-in registered at run time";
  }
  std::string label() const {
    return "plugin '" + info.name + "' (" + (library ? info.path : std::string("built-in")) + ")";
  }
};

// Destroys a plugin's object inside the plugin and keeps the plugin's entry (and library) alive.
struct plugin_deleter {
  std::shared_ptr<const entry> owner;
  void operator()(plugin_object *object) const noexcept {
    try {
      if (owner->library)
        owner->library->destroy()(object);
      else
        delete object;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "cuplug: %s threw while destroying its %s: %s\n", owner->label().c_str(),
                   to_string(owner->info.kind), e.what());
    } catch (...) {
      std::fprintf(stderr, "cuplug: %s threw while destroying its %s\n", owner->label().c_str(),
                   to_string(owner->info.kind));
    }
  }
};

using entry_key = std::pair<plugin_kind, std::string>;

} // namespace

const char *to_string(plugin_candidate::state s) noexcept {
  switch (s) {
  case plugin_candidate::state::loaded:
    return "loaded";
  case plugin_candidate::state::rejected:
    return "rejected";
  case plugin_candidate::state::duplicate:
    return "duplicate";
  }
  return "unknown";
}

struct registry::impl {
  // Recursive: a plugin's static initialisers run inside dlopen, under this lock, and may ask
  // the registry things. It is never held while a factory or destroy function runs.
  mutable std::recursive_mutex mutex;
  std::map<entry_key, std::shared_ptr<const entry>> entries;
  std::vector<plugin_candidate> candidates;
  std::map<std::string, std::size_t> candidate_index;     // absolute path -> candidates[i]
  std::map<std::string, std::string> loaded_files;        // canonical path -> absolute path
  std::vector<std::shared_ptr<plugin_library>> libraries; // every library ever loaded

  std::atomic<bool> scanned{false};
  std::mutex scan_mutex;

  void ensure_scanned(registry &self);
  void scan(registry &self);

  plugin_candidate &record(plugin_candidate c) {
    auto it = candidate_index.find(c.path);
    if (it != candidate_index.end())
      return candidates[it->second] = std::move(c);
    candidate_index[c.path] = candidates.size();
    candidates.push_back(std::move(c));
    return candidates.back();
  }

  // Marks the candidate that provided `old` as superseded by `winner`.
  void supersede(const entry &old, const std::string &winner) {
    auto it = candidate_index.find(old.info.path);
    if (!old.library || it == candidate_index.end())
      return;
    plugin_candidate &c = candidates[it->second];
    c.outcome = plugin_candidate::state::duplicate;
    c.reason = std::string(to_string(old.info.kind)) + " '" + old.info.name + "' is provided by " +
               winner + ", which takes precedence";
  }

  std::vector<plugin_candidate> load_path(const std::string &path, const std::string &source,
                                          bool &replaced);
  plugin_candidate load_file(const fs::path &file, const std::string &source, bool &replaced);
  std::string unknown_name_message(plugin_kind kind, const std::string &name) const;
};

registry::registry() : impl_(std::make_unique<impl>()) {}

registry &registry::instance() {
  // Leaked on purpose, so plugin libraries are never unloaded, not even at exit (objects made
  // by plugins may be destroyed after static destructors run).
  static registry *const the_registry = new registry();
  the_registry->impl_->ensure_scanned(*the_registry);
  return *the_registry;
}

void registry::impl::ensure_scanned(registry &self) {
  if (scanned.load(std::memory_order_acquire))
    return;
  // A plugin loaded by the scan may reach instance() from its static initialisers on this
  // thread; it sees the registry as it is so far instead of deadlocking.
  thread_local bool scanning_here = false;
  if (scanning_here)
    return;
  std::lock_guard<std::mutex> lock(scan_mutex);
  if (scanned.load(std::memory_order_relaxed))
    return;
  scanning_here = true;
  try {
    scan(self);
  } catch (...) {
    // Every candidate records its own failure; nothing else here is expected to throw, and
    // discovery must never make instance() unusable.
  }
  scanning_here = false;
  scanned.store(true, std::memory_order_release);
}

void registry::impl::scan(registry &self) {
  if (const char *env = std::getenv("CUPLUG_PLUGIN_PATH")) {
    std::stringstream entries(env);
    std::string item;
    while (std::getline(entries, item, ':')) {
      if (item.empty())
        continue;
      if (!fs::path(item).is_absolute()) {
        std::lock_guard<std::recursive_mutex> lock(mutex);
        plugin_candidate c;
        c.path = item;
        c.reason = "CUPLUG_PLUGIN_PATH entry '" + item +
                   "' is a relative path; only absolute paths are searched, so that what loads "
                   "does not depend on the current directory: write it as an absolute path";
        record(std::move(c));
        continue;
      }
      self.load(item, "CUPLUG_PLUGIN_PATH");
    }
  }
  const fs::path dir = fs::path(package_plugin_dir()).parent_path();
  for (const fs::path &folder : {dir / "plugins", dir / "cuplug" / "plugins"}) {
    std::error_code ec;
    if (fs::is_directory(folder, ec))
      self.load(folder.string(), "package");
  }
}

std::string registry::package_plugin_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&registry::package_plugin_dir), &info) == 0 ||
      info.dli_fname == nullptr)
    return "plugins";
  const fs::path lib_dir = fs::absolute(info.dli_fname).parent_path();
  // Build tree and wheel: <pkg>/libcuplug_core.so + <pkg>/plugins; CMake install:
  // <prefix>/lib/libcuplug_core.so + <prefix>/lib/cuplug/plugins.
  std::error_code ec;
  if (!fs::is_directory(lib_dir / "plugins", ec) &&
      fs::is_directory(lib_dir / "cuplug" / "plugins", ec))
    return (lib_dir / "cuplug" / "plugins").string();
  return (lib_dir / "plugins").string();
}

std::vector<plugin_candidate> registry::load(const std::string &path, const std::string &source) {
  bool replaced = false;
  std::vector<plugin_candidate> result;
  {
    std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
    result = impl_->load_path(path, source, replaced);
  }
  // Cached backend objects may come from a plugin that was just superseded.
  if (replaced)
    reset_backends();
  return result;
}

std::vector<plugin_candidate> registry::impl::load_path(const std::string &path,
                                                        const std::string &source, bool &replaced) {
  std::error_code ec;
  const fs::path given = fs::absolute(path, ec).lexically_normal();
  auto reject = [&](const std::string &why) {
    plugin_candidate c;
    c.path = path.empty() ? std::string("(empty path)") : given.string();
    c.reason = why;
    return std::vector<plugin_candidate>{record(std::move(c))};
  };
  const std::string origin =
      source == "CUPLUG_PLUGIN_PATH" ? "CUPLUG_PLUGIN_PATH entry '" + path + "'" : "'" + path + "'";
  if (path.empty())
    return reject("empty plugin path: give a plugin file or a folder of lib*.so plugins");
  if (ec || !fs::exists(given, ec))
    return reject(origin + " does not exist: give a plugin file or a folder of lib*.so plugins");
  if (!fs::is_directory(given, ec))
    return {load_file(given, source, replaced)};

  std::vector<fs::path> files;
  for (fs::directory_iterator it(given, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 6 && name.compare(0, 3, "lib") == 0 &&
        name.compare(name.size() - 3, 3, ".so") == 0 && !fs::is_directory(it->path()))
      files.push_back(it->path());
  }
  if (ec)
    return reject("cannot list the folder " + given.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<plugin_candidate> result;
  for (const fs::path &f : files)
    result.push_back(load_file(f, source, replaced));
  return result;
}

plugin_candidate registry::impl::load_file(const fs::path &file, const std::string &source,
                                           bool &replaced) {
  plugin_candidate c;
  c.path = file.string();
  auto reject = [&](std::string why) -> plugin_candidate {
    c.outcome = plugin_candidate::state::rejected;
    c.reason = std::move(why);
    return record(c);
  };

  std::error_code ec;
  const fs::path real = fs::canonical(file, ec);
  if (ec)
    return reject("cannot resolve " + file.string() + ": " + ec.message());
  if (auto it = loaded_files.find(real.string()); it != loaded_files.end())
    return candidates[candidate_index.at(it->second)]; // already loaded: loading is idempotent

  detail::checked_file checked;
  if (std::string problem = detail::check_candidate(file, c, checked); !problem.empty())
    return reject(std::move(problem));

  const plugin_manifest &m = c.manifest;
  const auto kind = static_cast<plugin_kind>(m.kind);
  const std::string name = field_string(m.name);
  const entry_key key{kind, name};
  const int rank = source_rank(source);
  std::shared_ptr<const entry> previous;
  // Decided before the library is opened, so a losing duplicate never runs any of its code.
  if (auto it = entries.find(key); it != entries.end()) {
    if (it->second->rank <= rank) {
      c.outcome = plugin_candidate::state::duplicate;
      c.reason = std::string(to_string(kind)) + " '" + name + "' is already provided by " +
                 it->second->provider() +
                 ", which takes precedence (explicit paths, then CUPLUG_PLUGIN_PATH, then the "
                 "package folder; the first found wins)";
      return record(c);
    }
    previous = it->second;
  }

  detail::loaded_library loaded = detail::load_library(checked, c);
  if (loaded.library)
    libraries.push_back(loaded.library); // kept even when refused: its initialisers have run
  if (!loaded.problem.empty())
    return reject(std::move(loaded.problem));

  auto e = std::make_shared<entry>();
  e->info = plugin_info{name,
                        kind,
                        c.path,
                        field_string(m.description),
                        field_string(m.version),
                        field_string(m.abi_tag),
                        source};
  e->rank = rank;
  e->library = loaded.library;
  if (previous) {
    supersede(*previous, c.path + " (" + source + ")");
    replaced = true;
  }
  entries[key] = std::move(e);
  loaded_files[real.string()] = c.path;
  c.outcome = plugin_candidate::state::loaded;
  c.reason.clear();
  return record(c);
}

std::vector<plugin_info> registry::available() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  std::vector<plugin_info> out;
  for (const auto &[key, e] : impl_->entries)
    out.push_back(e->info);
  return out;
}

std::vector<plugin_info> registry::available(plugin_kind kind) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  std::vector<plugin_info> out;
  for (const auto &[key, e] : impl_->entries)
    if (key.first == kind)
      out.push_back(e->info);
  return out;
}

std::vector<plugin_candidate> registry::diagnostics() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  return impl_->candidates;
}

std::vector<std::string> registry::names(plugin_kind kind) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  std::vector<std::string> out;
  for (const auto &[key, e] : impl_->entries)
    if (key.first == kind)
      out.push_back(key.second); // the map is ordered, so these are sorted
  return out;
}

bool registry::has(plugin_kind kind, const std::string &name) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  return impl_->entries.count({kind, name}) != 0;
}

plugin_info registry::info(plugin_kind kind, const std::string &name) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  auto it = impl_->entries.find({kind, name});
  if (it == impl_->entries.end())
    throw config_error(impl_->unknown_name_message(kind, name));
  return it->second->info;
}

std::string registry::impl::unknown_name_message(plugin_kind kind, const std::string &name) const {
  std::vector<std::string> known;
  for (const auto &[key, e] : entries)
    if (key.first == kind)
      known.push_back(key.second);
  std::string msg = std::string("unknown ") + to_string(kind) + " '" + name +
                    "'; available: " + (known.empty() ? std::string("none") : join(known));
  // The likeliest reason a name is missing: a plugin of that name was found and refused.
  for (const plugin_candidate &c : candidates)
    if (c.has_manifest && c.outcome == plugin_candidate::state::rejected &&
        c.manifest.kind == static_cast<std::uint32_t>(kind) && terminated(c.manifest.name) &&
        field_string(c.manifest.name) == name)
      msg += " (" + c.path + " provides it but was not loaded: " + c.reason + ")";
  return msg;
}

plugin_ptr<plugin_object> registry::create(plugin_kind kind, const std::string &name,
                                           const options &opts) {
  std::shared_ptr<const entry> e;
  {
    std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
    auto it = impl_->entries.find({kind, name});
    if (it == impl_->entries.end())
      throw config_error(impl_->unknown_name_message(kind, name));
    e = it->second;
  }
  // A fresh copy, so the options the plugin reads are tracked for this creation alone.
  options local(opts.values(), opts.distrusted());
  const std::string failed = e->label() + " failed to create its " + to_string(kind) + ": ";
  plugin_object *raw = nullptr;
  try {
    raw = e->library ? e->library->create()(local) : e->builtin(local);
  } catch (const cuda_error &) {
    throw; // keeps its CUresult, so Python still sees PyCUDA's class for it
  } catch (const config_error &x) {
    throw config_error(failed + x.what());
  } catch (const std::exception &x) {
    throw plugin_error(failed + x.what());
  } catch (...) {
    throw plugin_error(failed + "it threw something that is not a std::exception");
  }
  if (raw == nullptr)
    throw plugin_error(failed + "its factory returned no object");
  // Owned from here on, so every exit below destroys it inside its plugin.
  plugin_ptr<plugin_object> object(raw, plugin_deleter{e});
  if (!is_kind(raw, kind))
    throw plugin_error(e->label() + " made an object of type " +
                       boost::core::demangle(typeid(*raw).name()) +
                       ", which is not a cuplug::" + to_string(kind) +
                       ": its factory must return a class derived from cuplug::" + to_string(kind));
  if (std::vector<std::string> unknown = local.unknown(); !unknown.empty()) {
    object.reset();
    std::vector<std::string> accepted(local.known().begin(), local.known().end());
    throw config_error(std::string(unknown.size() == 1 ? "unknown option " : "unknown options ") +
                       join(unknown, "'") + " for " + to_string(kind) + " '" + name + "'; " +
                       (accepted.empty() ? std::string("it accepts no options")
                                         : "it accepts: " + join(accepted)));
  }
  raw->set_backend_name(name);
  return object;
}

void registry::add_builtin(plugin_kind kind, const std::string &name,
                           const std::string &description, factory make) {
  if (!known_kind(static_cast<std::uint32_t>(kind)))
    throw config_error("add_builtin: unknown plugin kind " +
                       std::to_string(static_cast<std::uint32_t>(kind)));
  if (!valid_name(name))
    throw config_error("backend name '" + name +
                       "' is not valid: use lowercase letters, digits and '_' (e.g. 'my_pool')");
  if (!make)
    throw config_error("add_builtin: no factory given for " + std::string(to_string(kind)) + " '" +
                       name + "'");
  auto e = std::make_shared<entry>();
  e->info = plugin_info{name, kind, "", description, "", CUPLUG_ABI_TAG, "builtin"};
  e->rank = source_rank("builtin");
  e->builtin = std::move(make);
  bool replaced = false;
  {
    std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
    // A later registration of the same name replaces the earlier one (re-running a notebook
    // cell that defines an allocator must not fail).
    if (auto it = impl_->entries.find({kind, name}); it != impl_->entries.end()) {
      impl_->supersede(*it->second, "a built-in registered at run time");
      replaced = true;
    }
    impl_->entries[{kind, name}] = std::move(e);
  }
  if (replaced)
    reset_backends();
}

} // namespace cuplug
