// Backend objects for the current selection, cached so the per-launch lookup costs three loads.
#include <cuplug/backends.hpp>
#include <cuplug/config.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/log.hpp>
#include <cuplug/printable.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

namespace cuplug {
namespace {

using object_key = std::tuple<plugin_kind, std::string, std::map<std::string, std::string>>;

// The selected object of one kind, valid for one (config generation, reset epoch).
struct resolved {
  unsigned long generation = 0;
  unsigned long epoch = 0;
  plugin_ptr<plugin_object> object;
};

struct backend_cache {
  std::mutex mutex;
  // One object per (kind, name, options): switching back and forth reuses it, so a pool keeps
  // its memory and a compiler its state.
  std::map<object_key, plugin_ptr<plugin_object>> objects;
  std::map<plugin_kind, resolved> current;
  // Bumped by reset_backends() and when the registry's table changed (below); together with
  // config::generation() it says whether a cached selection is still the one config would give.
  std::atomic<unsigned long> epoch{1};
  // The registry::generation() the objects were made under. The registry does not call back
  // into this file when a name comes to mean another plugin: it bumps its generation, and the
  // cache notices here.
  unsigned long table = 0;
};

backend_cache &cache() {
  // Leaked on purpose: the objects it holds must not be destroyed during exit, when the driver
  // or a plugin's dependencies may already be gone.
  static backend_cache *const the_cache = new backend_cache();
  return *the_cache;
}

// Drops every cached object if the registry's table changed since they were made, as
// reset_backends() does. The dropped objects are destroyed by the caller, outside the lock.
void follow_registry(backend_cache &c, unsigned long table,
                     std::map<object_key, plugin_ptr<plugin_object>> &dropped,
                     std::map<plugin_kind, resolved> &dropped_current) {
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.table == table)
    return;
  c.table = table;
  dropped.swap(c.objects);
  dropped_current.swap(c.current);
  c.epoch.fetch_add(1, std::memory_order_acq_rel);
}

void follow_registry(backend_cache &c) {
  std::map<object_key, plugin_ptr<plugin_object>> dropped;
  std::map<plugin_kind, resolved> dropped_current;
  follow_registry(c, registry::generation(), dropped, dropped_current);
}

// The slow path: resolves config::selected(kind) once per (generation, epoch) for the whole
// process, and that is when CUPLUG_<KIND> is read. So the environment is read once per
// configuration generation, not on every call: an environment variable changed while the
// process runs takes effect at the next configuration change (cuplug.use(), a config file,
// options) or reset_backends(). Reading it on every launch would cost a lock and a getenv.
plugin_ptr<plugin_object> resolve_current(plugin_kind kind, unsigned long generation,
                                          unsigned long epoch) {
  backend_cache &c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    const resolved &r = c.current[kind];
    if (r.object && r.generation == generation && r.epoch == epoch)
      return r.object;
  }
  const selection chosen = config::instance().selected(kind);
  if (!registry::instance().has(kind, chosen.name)) {
    try {
      registry::instance().info(kind, chosen.name); // throws the "available: ..." message
    } catch (const config_error &e) {
      throw config_error(std::string(e.what()) + " (selected by " + printable(chosen.origin) + ")");
    }
  }
  plugin_ptr<plugin_object> object = backend(kind, chosen.name);
  if (log_enabled(log_component::plugins, log_level::debug))
    log(log_component::plugins, log_level::debug,
        std::string(to_string(kind)) + " backend '" + printable(chosen.name) + "' (selected by " +
            printable(chosen.origin) + ")");
  // The selection replaced, destroyed after the lock is released: a Python-defined backend's
  // destructor runs Python code, which may let the GIL go to a thread waiting for this lock.
  resolved replaced;
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.epoch.load(std::memory_order_relaxed) == epoch)
    replaced = std::exchange(c.current[kind], resolved{generation, epoch, object});
  return object;
}

// The hot path: each thread keeps its own copy of the last answer per kind, so a repeated call
// is three atomic loads, three compares and a reference-count increment, with no lock.
template <class T> plugin_ptr<T> current(plugin_kind kind) {
  struct slot {
    unsigned long generation = 0;
    unsigned long epoch = 0;
    unsigned long table = 0;
    plugin_ptr<T> object;
  };
  thread_local slot mine;
  const unsigned long table = registry::generation();
  const unsigned long generation = config::instance().generation();
  unsigned long epoch = cache().epoch.load(std::memory_order_acquire);
  if (mine.object && mine.generation == generation && mine.epoch == epoch && mine.table == table)
    return mine.object;
  follow_registry(cache()); // may bump the epoch
  epoch = cache().epoch.load(std::memory_order_acquire);
  // registry::create checked the object's dynamic type against the kind.
  plugin_ptr<T> object = std::static_pointer_cast<T>(resolve_current(kind, generation, epoch));
  mine = slot{generation, epoch, table, object};
  return object;
}

} // namespace

plugin_ptr<plugin_object> backend(plugin_kind kind, const std::string &name) {
  backend_cache &c = cache();
  follow_registry(c);
  options opts = config::instance().plugin_options(kind, name);
  object_key key{kind, name, opts.values()};
  unsigned long epoch;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (auto it = c.objects.find(key); it != c.objects.end())
      return it->second;
    epoch = c.epoch.load(std::memory_order_relaxed);
  }
  // Created without the lock: a plugin's constructor may ask for another backend (a pool for
  // its upstream allocator).
  plugin_ptr<plugin_object> made = registry::instance().create(kind, name, opts);
  plugin_ptr<plugin_object> winner;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.epoch.load(std::memory_order_relaxed) != epoch)
      return made; // reset meanwhile: hand it out, do not cache an object of the old registry
    winner = c.objects.emplace(std::move(key), made).first->second;
  }
  return winner; // a thread that raced us may have won; ours is then destroyed here, unlocked
}

plugin_ptr<allocator> current_allocator() { return current<allocator>(plugin_kind::allocator); }
plugin_ptr<compiler> current_compiler() { return current<compiler>(plugin_kind::compiler); }
plugin_ptr<launcher> current_launcher() { return current<launcher>(plugin_kind::launcher); }
plugin_ptr<rng> current_rng() { return current<rng>(plugin_kind::rng); }

void reset_backends() {
  backend_cache &c = cache();
  std::map<object_key, plugin_ptr<plugin_object>> dropped;
  std::map<plugin_kind, resolved> dropped_current;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    dropped.swap(c.objects);
    dropped_current.swap(c.current);
    c.epoch.fetch_add(1, std::memory_order_acq_rel);
  }
  // Destroyed here, outside the lock: a destructor may itself ask for a backend.
}

} // namespace cuplug
