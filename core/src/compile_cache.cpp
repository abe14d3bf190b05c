// The compile cache: the in-memory LRU of requests and the public compile_cache API.
#include "compile_inputs.hpp"
#include "disk_store.hpp"
#include "path_trust.hpp"
#include "sha256.hpp"

#include <cuplug/compile_cache.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/log.hpp>
#include <cuplug/options.hpp>
#include <cuplug/printable.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>

namespace cuplug {
namespace fs = std::filesystem;

namespace {
bool env_true(const char *name) {
  const char *v = std::getenv(name);
  if (v == nullptr || *v == '\0')
    return false;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return !(s == "0" || s == "false" || s == "no" || s == "off");
}

// The image key: the request key and the content of what the compile read; for a compile whose
// inputs were not recorded, the request key and the image itself (so equal keys still mean
// equal images, which is what loaded-module caches rely on).
std::string image_key(const std::string &request_key, const recorded_inputs *inputs,
                      const compiled_image &image) {
  sha256 h;
  h.field("cuplug image");
  h.field(request_key);
  if (inputs) {
    hash_inputs(h, *inputs);
  } else {
    h.field("unrecorded");
    h.field(image.data);
    for (const auto &[expr, lowered] : image.lowered_names) {
      h.field(expr);
      h.field(lowered);
    }
  }
  return h.hex();
}

// A compile in a log line: the source's name and the request key's first 12 digits (the name of
// its disk entry starts with them).
std::string describe(const cache_request &request, const std::string &request_key) {
  const compile_request &req = request.request();
  return printable(req.source_name) + " [" + request_key.substr(0, 12) + "]";
}

std::string milliseconds_since(long long started_ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", static_cast<double>(now_ns() - started_ns) / 1e6);
  return text;
}

// Passes a compile line on at once: the callers hold no lock (compile_cache::compile's
// contract), so the sink may wait for Python's GIL rather than queue the line until the compile
// returns, which would leave a long compile silent until it has ended.
void say(log_level level, const std::string &message) noexcept {
  log_unlocked now;
  log(log_component::compile, level, message);
}

// Whether such a line is wanted, asked the same way (a sink without the GIL would otherwise go by
// the level it saw last).
bool wanted(log_level level) noexcept {
  log_unlocked now;
  return log_enabled(log_component::compile, level);
}
} // namespace

const char *to_string(cache_hit hit) noexcept {
  switch (hit) {
  case cache_hit::none:
    return "none";
  case cache_hit::memory:
    return "memory";
  case cache_hit::disk:
    return "disk";
  }
  return "unknown";
}

struct compile_cache::impl {
  struct entry {
    cache_request request;
    std::shared_ptr<const cache_result> result;
    std::shared_ptr<const recorded_inputs> inputs;
    std::size_t bytes;
  };
  // Most recently used first; the map holds iterators into it.
  std::list<entry> lru;
  std::unordered_multimap<std::size_t, std::list<entry>::iterator> index;
  std::size_t memory_bytes = 0;
  // Generated kernels can be many; the in-process layer keeps at most this much image data.
  static constexpr std::size_t memory_cap = std::size_t(256) << 20;
  mutable std::mutex mutex;

  std::mutex stores_mutex;
  std::unordered_map<std::string, std::unique_ptr<disk_store>> stores;

  disk_store &store(const std::string &directory) {
    std::string root = directory.empty() ? compile_cache::default_directory() : directory;
    std::lock_guard<std::mutex> lock(stores_mutex);
    auto &s = stores[root];
    if (!s)
      s = std::make_unique<disk_store>(root);
    return *s;
  }

  void insert(const cache_request &request, std::shared_ptr<const cache_result> result,
              std::shared_ptr<const recorded_inputs> inputs) {
    entry e{request, std::move(result), std::move(inputs), 0};
    e.bytes = e.result->image->data.size() + e.result->image->log.size() +
              request.request().source.size();
    std::lock_guard<std::mutex> lock(mutex);
    auto range = index.equal_range(request.hash());
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second->request.same_as(request)) {
        memory_bytes -= it->second->bytes;
        lru.erase(it->second);
        index.erase(it);
        break;
      }
    }
    memory_bytes += e.bytes;
    lru.push_front(std::move(e));
    index.emplace(request.hash(), lru.begin());
    while (memory_bytes > memory_cap && lru.size() > 1) {
      auto last = std::prev(lru.end());
      auto r = index.equal_range(last->request.hash());
      for (auto it = r.first; it != r.second; ++it)
        if (it->second == last) {
          index.erase(it);
          break;
        }
      memory_bytes -= last->bytes;
      lru.pop_back();
    }
  }
};

compile_cache::compile_cache() : impl_(std::make_unique<impl>()) {}
compile_cache::~compile_cache() = default;

compile_cache &compile_cache::instance() {
  // Never destroyed: entries hold compiler objects whose plugins must outlive them, and
  // libraries are not unloaded at exit.
  static compile_cache *cache = new compile_cache();
  return *cache;
}

bool compile_cache::disabled_by_environment() { return env_true("CUPLUG_DISABLE_CACHE"); }

std::string compile_cache::default_directory() {
  if (const char *d = std::getenv("CUPLUG_CACHE_DIR"); d && *d)
    return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x == '/')
    return (fs::path(x) / "cuplug").string();
  // A relative HOME (HOME=.) would put the cache under the current directory: not used.
  const std::string home = detail::user_home();
  if (home.empty())
    return {};
  return (fs::path(home) / ".cache" / "cuplug").string();
}

std::size_t compile_cache::max_disk_bytes() {
  constexpr std::size_t fallback = std::size_t(1) << 30;
  const char *v = std::getenv("CUPLUG_CACHE_MAX_SIZE");
  if (v == nullptr || *v == '\0')
    return fallback;
  try {
    std::map<std::string, std::string> values{{"CUPLUG_CACHE_MAX_SIZE", v}};
    return options(values).get_bytes("CUPLUG_CACHE_MAX_SIZE", fallback);
  } catch (const config_error &) {
    throw config_error(std::string("CUPLUG_CACHE_MAX_SIZE='") + v +
                       "' is not a size; use bytes or a unit, e.g. 536870912 or 512MiB");
  }
}

std::shared_ptr<const cache_result> compile_cache::find(const cache_request &request) {
  const long long started = now_ns();
  std::shared_ptr<const recorded_inputs> inputs;
  std::shared_ptr<const cache_result> result;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto range = impl_->index.equal_range(request.hash());
    for (auto it = range.first; it != range.second; ++it) {
      if (!it->second->request.same_as(request))
        continue;
      impl_->lru.splice(impl_->lru.begin(), impl_->lru, it->second);
      result = it->second->result;
      inputs = it->second->inputs;
      break;
    }
  }
  if (!result || !inputs_unchanged(*inputs))
    return nullptr;
  // Debug, not info: a memory hit costs microseconds and comes with every repeated
  // SourceModule or generated kernel, so at info it would drown the compiles that cost time.
  if (log_enabled(log_component::compile, log_level::debug))
    log(log_component::compile, log_level::debug,
        describe(request, compile_cache_key(request)) + " found in " + milliseconds_since(started) +
            " (cache: memory hit)");
  return result;
}

cache_result compile_cache::compile(const cache_request &request, const cache_policy &policy) {
  const compile_request &req = request.request();
  // Kept files are the point of such a compile: the compiler must run.
  const bool off = disabled_by_environment() || req.keep_files;
  const bool use_memory = policy.memory && !off;
  if (use_memory) {
    if (auto hit = find(request))
      return *hit;
  }
  const long long called = now_ns();
  cache_result out;
  const std::string request_key = compile_cache_key(request);

  disk_store *store = nullptr;
  if (policy.disk && !off) {
    disk_store &s = impl_->store(policy.directory);
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.status.state_ == disk_cache_status::state::usable) {
      store = &s;
    } else if (!s.warned) {
      s.warned = true;
      out.warning = "cuplug: not using the compile cache directory: " + s.status.reason +
                    "; compiled kernels are kept in memory only. Set CUPLUG_CACHE_DIR to a "
                    "directory only you can write to.";
    }
  }

  std::shared_ptr<recorded_inputs> inputs;
  if (store) {
    cache_entry e;
    if (store->read(request_key, e) && inputs_unchanged(e.inputs)) {
      out.key = e.image_key;
      out.image = std::make_shared<const compiled_image>(std::move(e.image));
      out.hit = cache_hit::disk;
      inputs = std::make_shared<recorded_inputs>(std::move(e.inputs));
      // Debug, as a memory hit: reading an entry takes about a millisecond, and a program with
      // many generated kernels would print a line for each of them on every run.
      if (wanted(log_level::debug))
        say(log_level::debug, describe(request, request_key) + " loaded in " +
                                  milliseconds_since(called) + " (cache: disk hit)");
    }
  }
  if (!out.image) {
    // Info: the compiler runs, which takes from a fraction of a second to minutes; this line is
    // what a user watching a silent program looks for.
    const bool say_info = wanted(log_level::info);
    const std::string what = say_info ? describe(request, request_key) : std::string();
    if (say_info)
      say(log_level::info, "compiling " + what + " with " +
                               printable(request.backend().backend_name()) + " for " +
                               (req.arch.empty() ? std::string("the backend's default architecture")
                                                 : printable(req.arch)) +
                               ", " + to_string(req.target));
    const long long started = now_ns();
    std::shared_ptr<const compiled_image> image;
    try {
      image = std::make_shared<const compiled_image>(request.backend().compile(req));
    } catch (...) {
      if (say_info)
        say(log_level::info, "compiling " + what + " failed after " + milliseconds_since(started) +
                                 " (cache: nothing stored)");
      throw;
    }
    out.image = image;
    out.hit = cache_hit::none;
    if (use_memory || store) {
      auto recorded = std::make_shared<recorded_inputs>();
      if (record_inputs(image->inputs, started, *recorded, out.not_cached))
        inputs = std::move(recorded);
    }
    out.key = image_key(request_key, inputs.get(), *image);
    const std::string compiled_in = milliseconds_since(started);
    bool on_disk = false;
    if (store && inputs) {
      cache_entry e{*image, out.key, *inputs};
      std::lock_guard<std::mutex> lock(store->mutex);
      std::string err = store->write(request_key, e);
      if (!err.empty() && !store->write_warned) {
        store->write_warned = true;
        out.warning = "cuplug: could not store a compiled kernel in the cache: " + err;
      }
      on_disk = err.empty();
      if (on_disk)
        store->evict(max_disk_bytes(), request_key);
    }
    const char *where = !use_memory && !store   ? "not stored: the cache is off"
                        : !inputs               ? "not stored: its inputs were not recorded"
                        : on_disk && use_memory ? "stored on disk and in memory"
                        : on_disk               ? "stored on disk"
                        : use_memory            ? "kept in memory only"
                                                : "not stored: the disk entry could not be written";
    // After the disk store's lock is released.
    if (say_info)
      say(log_level::info,
          "compiled " + what + " in " + compiled_in + " (cache: compiled, " + where + ")");
  }
  if (use_memory && inputs) {
    auto stored = std::make_shared<cache_result>(out);
    stored->hit = cache_hit::memory;
    stored->warning.clear();
    impl_->insert(request, std::move(stored), std::move(inputs));
  }
  return out;
}

disk_cache_status compile_cache::disk_status(const std::string &directory) {
  disk_store &s = impl_->store(directory);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.status;
}

void compile_cache::clear_memory() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->index.clear();
  impl_->lru.clear();
  impl_->memory_bytes = 0;
}

std::size_t compile_cache::memory_entries() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->lru.size();
}

std::size_t compile_cache::clear_disk(const std::string &directory) {
  disk_store &s = impl_->store(directory);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.clear();
}

} // namespace cuplug
