// The plugin registry's table: which plugin or built-in answers to a (kind, name), precedence and
// duplicates, create() and create_adaptor(). Where candidate files come from is
// registry_discovery.cpp; whether a file may be trusted and how it is opened, plugin_loader.cpp.
#include <cuplug/allocator.hpp>
#include <cuplug/compiler.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/interop.hpp>
#include <cuplug/launcher.hpp>
#include <cuplug/log.hpp>
#include <cuplug/printable.hpp>
#include <cuplug/registry.hpp>
#include <cuplug/rng.hpp>

#include "plugin_loader.hpp"
#include "registry_discovery.hpp"
#include "registry_upstream.hpp"

#include <boost/core/demangle.hpp>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <typeinfo>

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
      log_warning("cuplug WARNING: " + owner->label() + " threw while destroying its " +
                  to_string(owner->info.kind) + ": " + e.what());
    } catch (...) {
      log_warning("cuplug WARNING: " + owner->label() + " threw while destroying its " +
                  to_string(owner->info.kind));
    }
  }
};

using entry_key = std::pair<plugin_kind, std::string>;

// registry::generation(): a name came to mean another plugin. Not a member of the registry, so
// reading it neither scans nor locks.
std::atomic<unsigned long> table_generation{1};

void name_replaced() { table_generation.fetch_add(1, std::memory_order_acq_rel); }

// The offer of the creation running on this thread (see registry_upstream.hpp).
thread_local detail::upstream_offer::slot *offered = nullptr;

} // namespace

namespace detail {

upstream_offer::upstream_offer(plugin_ptr<allocator> object) noexcept
    : mine_{std::move(object), false}, previous_(offered) {
  offered = &mine_;
}

upstream_offer::~upstream_offer() { offered = previous_; }

plugin_ptr<allocator> take_offered_upstream() noexcept {
  if (offered == nullptr || !offered->object || offered->taken)
    return nullptr;
  offered->taken = true;
  return std::move(offered->object);
}

} // namespace detail

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

  plugin_candidate &record(plugin_candidate c) {
    if (log_enabled(log_component::plugins, log_level::debug))
      log(log_component::plugins, log_level::debug,
          "plugin candidate " + printable(c.path) + ": " + to_string(c.outcome) +
              (c.reason.empty() ? "" : " (" + c.reason + ")"));
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

  plugin_candidate load_file(const fs::path &file, const std::string &source);
  std::string unknown_name_message(plugin_kind kind, const std::string &name) const;
  plugin_ptr<plugin_object> create(plugin_kind kind, const std::string &name, const options &opts,
                                   plugin_ptr<allocator> upstream);
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
  // Before the lock, so that the scan's messages reach the sink (maybe Python's logger, which
  // may let the GIL go to a thread that waits for this lock) once the lock is released.
  log_deferral deferred;
  std::lock_guard<std::mutex> lock(scan_mutex);
  if (scanned.load(std::memory_order_relaxed))
    return;
  scanning_here = true;
  try {
    for (const detail::search_entry &place : detail::default_search_path()) {
      if (place.problem.empty()) {
        self.load(place.path, place.source);
        continue;
      }
      std::lock_guard<std::recursive_mutex> lock(mutex);
      plugin_candidate c;
      c.path = place.path;
      c.reason = place.problem;
      record(std::move(c));
    }
  } catch (...) {
    // Every candidate records its own failure; nothing else here is expected to throw, and
    // discovery must never make instance() unusable.
  }
  scanning_here = false;
  scanned.store(true, std::memory_order_release);
}

std::string registry::package_plugin_dir() { return detail::package_plugin_dir(); }

unsigned long registry::generation() noexcept {
  return table_generation.load(std::memory_order_acquire);
}

std::vector<plugin_candidate> registry::load(const std::string &path, const std::string &source) {
  const detail::candidate_files found = detail::find_candidates(path, source);
  log_deferral deferred; // record() logs: emitted once the lock is released
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  if (!found.problem.empty()) {
    plugin_candidate c;
    c.path = path.empty() ? std::string("(empty path)") : found.given.string();
    c.reason = found.problem;
    return {impl_->record(std::move(c))};
  }
  std::vector<plugin_candidate> result;
  for (const fs::path &f : found.files)
    result.push_back(impl_->load_file(f, source));
  return result;
}

plugin_candidate registry::impl::load_file(const fs::path &file, const std::string &source) {
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
    return reject("cannot resolve " + printable(file.string()) + ": " + ec.message());
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
    name_replaced(); // cached backend objects may come from the plugin just superseded
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
  // The name may come from CUPLUG_<KIND>: its control characters are shown escaped.
  std::string msg = std::string("unknown ") + to_string(kind) + " '" + printable(name) +
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
  return impl_->create(kind, name, opts, nullptr);
}

plugin_ptr<allocator> registry::create_adaptor(const std::string &name, const options &opts,
                                               plugin_ptr<allocator> upstream) {
  if (!upstream)
    throw config_error("allocator '" + name + "': create_adaptor needs an upstream allocator");
  return std::static_pointer_cast<allocator>(
      impl_->create(plugin_kind::allocator, name, opts, std::move(upstream)));
}

plugin_ptr<plugin_object> registry::impl::create(plugin_kind kind, const std::string &name,
                                                 const options &opts,
                                                 plugin_ptr<allocator> upstream) {
  std::shared_ptr<const entry> e;
  {
    std::lock_guard<std::recursive_mutex> lock(mutex);
    auto it = entries.find({kind, name});
    if (it == entries.end())
      throw config_error(unknown_name_message(kind, name));
    e = it->second;
  }
  // A fresh copy, so the options the plugin reads are tracked for this creation alone.
  options local(opts.values(), opts.distrusted());
  const std::string failed = e->label() + " failed to create its " + to_string(kind) + ": ";
  plugin_object *raw = nullptr;
  // Installed for plain creations too (empty), so that nothing created inside this factory can
  // take an upstream offered to an outer creation.
  const bool adaptor_wanted = static_cast<bool>(upstream);
  detail::upstream_offer offer(std::move(upstream));
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
  if (adaptor_wanted && !offer.taken())
    throw config_error(e->label() +
                       " is not an allocator adaptor: it never asked for an upstream "
                       "allocator (pool::make_upstream), so it cannot be created over one");
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
  // The entry replaced, destroyed after the lock is released: its factory may hold Python
  // objects, whose release runs Python code.
  std::shared_ptr<const entry> replaced;
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  // A later registration of the same name replaces the earlier one (re-running a notebook cell
  // that defines an allocator must not fail).
  if (auto it = impl_->entries.find({kind, name}); it != impl_->entries.end()) {
    impl_->supersede(*it->second, "a built-in registered at run time");
    name_replaced();
    replaced = std::move(it->second);
  }
  impl_->entries[{kind, name}] = std::move(e);
}

} // namespace cuplug
