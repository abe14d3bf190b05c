// The plugin registry: discovery, safety and manifest checks before loading, and object creation.
#include <cuplug/allocator.hpp>
#include <cuplug/backends.hpp>
#include <cuplug/compiler.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/interop.hpp>
#include <cuplug/launcher.hpp>
#include <cuplug/registry.hpp>
#include <cuplug/rng.hpp>

#include "elf_manifest.hpp"

#include <boost/core/demangle.hpp>
#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <typeinfo>

// CUPLUG_VERSION ("X.Y", from the project version in CMake) is for "rebuild it against cuplug
// X.Y" advice.

namespace fs = std::filesystem;

namespace cuplug {

// One loaded plugin library. Never unloaded: the registry (leaked) keeps every one it loaded,
// because objects, static data and exception types of a plugin may outlive any owner we track.
class plugin_library {
public:
  explicit plugin_library(boost::dll::shared_library lib) : library_(std::move(lib)) {}
  // Finds the create/destroy pair; throws (naming the symbol) if either is missing.
  void resolve() {
    create_ = &library_.get_alias<create_fn>(create_alias);
    destroy_ = &library_.get_alias<destroy_fn>(destroy_alias);
  }
  create_fn *create() const { return create_; }
  destroy_fn *destroy() const { return destroy_; }

private:
  boost::dll::shared_library library_;
  create_fn *create_ = nullptr;
  destroy_fn *destroy_ = nullptr;
};

namespace {

constexpr const char *rebuild_advice = "rebuild it against cuplug " CUPLUG_VERSION;

// Explicit paths win over CUPLUG_PLUGIN_PATH, which wins over the package's own folder.
int source_rank(const std::string &source) {
  if (source == "CUPLUG_PLUGIN_PATH")
    return 1;
  if (source == "package")
    return 2;
  return 0; // "explicit", "builtin"
}

bool valid_name(const std::string &name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool known_kind(std::uint32_t kind) { return kind >= 1 && kind <= 5; }

template <std::size_t N> bool terminated(const char (&field)[N]) {
  return std::memchr(field, '\0', N) != nullptr;
}
template <std::size_t N> std::string field_string(const char (&field)[N]) {
  return std::string(field, strnlen(field, N));
}

std::string join(const std::vector<std::string> &items, const char *quote = "") {
  std::string out;
  for (const std::string &s : items)
    out += (out.empty() ? "" : ", ") + (quote + s + quote);
  return out;
}

std::string user_name(uid_t uid) {
  char buffer[4096];
  passwd pw{}, *found = nullptr;
  if (getpwuid_r(uid, &pw, buffer, sizeof buffer, &found) == 0 && found != nullptr)
    return found->pw_name;
  return "uid " + std::to_string(uid);
}

// A group that only its owner can be in (Debian/Ubuntu "user private groups", umask 002): group
// write permission then grants nobody else anything, so it is not refused.
bool private_group_of(gid_t gid, uid_t owner) {
  char pw_buffer[4096], gr_buffer[16384];
  passwd pw{}, *pw_found = nullptr;
  group gr{}, *gr_found = nullptr;
  if (getpwuid_r(owner, &pw, pw_buffer, sizeof pw_buffer, &pw_found) != 0 || pw_found == nullptr)
    return false;
  if (getgrgid_r(gid, &gr, gr_buffer, sizeof gr_buffer, &gr_found) != 0 || gr_found == nullptr)
    return false;
  const bool no_other_members =
      gr.gr_mem == nullptr || gr.gr_mem[0] == nullptr ||
      (gr.gr_mem[1] == nullptr && std::strcmp(gr.gr_mem[0], pw.pw_name) == 0);
  return pw.pw_gid == gid && std::strcmp(gr.gr_name, pw.pw_name) == 0 && no_other_members;
}

std::string octal_mode(mode_t mode) {
  char out[8];
  std::snprintf(out, sizeof out, "%04o", static_cast<unsigned>(mode & 07777));
  return out;
}

// Why `p` (a plugin file or its folder) cannot be trusted, or "" if it can: anyone who could
// replace it could run code in this process.
std::string unsafe_reason(const fs::path &p, const char *what) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0)
    return std::string("cannot inspect ") + what + " " + p.string() + ": " + std::strerror(errno);
  const uid_t me = ::geteuid();
  if (st.st_uid != 0 && st.st_uid != me)
    return std::string("refused: the ") + what + " " + p.string() + " is owned by " +
           user_name(st.st_uid) + ", not by root or by you (" + user_name(me) +
           "), so its owner could replace it: move it to a folder you own, or run chown " +
           user_name(me) + " " + p.string();
  if ((st.st_mode & S_IWOTH) != 0)
    return std::string("refused: the ") + what + " " + p.string() +
           " is writable by others (mode " + octal_mode(st.st_mode) +
           "), so anyone could replace it: run chmod o-w " + p.string();
  if ((st.st_mode & S_IWGRP) != 0 && !private_group_of(st.st_gid, st.st_uid))
    return std::string("refused: the ") + what + " " + p.string() +
           " is writable by its group (mode " + octal_mode(st.st_mode) +
           "), so other users could replace it: run chmod g-w " + p.string();
  return {};
}

// Who a message is about: "plugin 'nvrtc' (/path/libx.so)", or the file alone while the
// manifest's name cannot be trusted yet.
std::string who(const plugin_manifest &m, const std::string &path) {
  const std::string name = field_string(m.name);
  if (terminated(m.name) && valid_name(name))
    return "plugin '" + name + "' (" + path + ")";
  return "plugin file " + path;
}

// Everything the manifest must satisfy before the library is loaded; "" when it does.
std::string manifest_problem(const plugin_manifest &m, std::size_t section_bytes,
                             const std::string &path) {
  static const char expected_magic[8] = {'C', 'U', 'P', 'L', 'U', 'G', 'M', '\0'};
  if (std::memcmp(m.magic, expected_magic, sizeof expected_magic) != 0)
    return "plugin file " + path + " has a '" + manifest_section +
           "' section that does not hold a cuplug manifest (bad magic bytes): " + rebuild_advice +
           " with CUPLUG_PLUGIN(...)";
  if (m.abi_major != plugin_abi_major)
    return who(m, path) + " was built for plugin ABI " + std::to_string(m.abi_major) +
           ", this cuplug provides " + std::to_string(plugin_abi_major) + ": " + rebuild_advice;
  if (m.struct_size != sizeof(plugin_manifest) || section_bytes != sizeof(plugin_manifest)) {
    std::string msg = who(m, path) + " has a manifest of " + std::to_string(m.struct_size) +
                      " bytes in a " + std::to_string(section_bytes) +
                      "-byte section, this cuplug expects " +
                      std::to_string(sizeof(plugin_manifest)) + ": " + rebuild_advice;
    if (section_bytes > m.struct_size && m.struct_size == sizeof(plugin_manifest))
      msg += " (is CUPLUG_PLUGIN used more than once in it?)";
    return msg;
  }
  for (auto [field, ok] :
       {std::pair{"abi_tag", terminated(m.abi_tag)}, std::pair{"name", terminated(m.name)},
        std::pair{"description", terminated(m.description)},
        std::pair{"version", terminated(m.version)}})
    if (!ok)
      return who(m, path) + " has a corrupt manifest: field '" + field +
             "' is not NUL-terminated; " + rebuild_advice;
  if (!known_kind(m.kind))
    return who(m, path) + " declares plugin kind " + std::to_string(m.kind) +
           ", which this cuplug does not know (it knows allocator, compiler, launcher, rng, "
           "interop): it needs a newer cuplug, or " +
           rebuild_advice;
  const auto kind = static_cast<plugin_kind>(m.kind);
  if (m.interface_version != interface_version(kind))
    return who(m, path) + " implements " + to_string(kind) + " interface version " +
           std::to_string(m.interface_version) + ", this cuplug provides " +
           std::to_string(interface_version(kind)) + ": " + rebuild_advice;
  if (field_string(m.abi_tag) != CUPLUG_ABI_TAG)
    return who(m, path) + " was built with ABI tag '" + field_string(m.abi_tag) +
           "', this cuplug has '" CUPLUG_ABI_TAG
           "' (compiler family, C++ ABI, standard library and architecture must match): rebuild "
           "it with the compiler and standard library cuplug was built with";
  if (!valid_name(field_string(m.name)))
    return "plugin file " + path + " has the name '" + field_string(m.name) +
           "'; backend names are lowercase letters, digits and '_' (e.g. 'my_pool'): fix the "
           "name in its CUPLUG_PLUGIN(...)";
  return {};
}

bool is_kind(plugin_object *object, plugin_kind kind) {
  switch (kind) {
  case plugin_kind::allocator:
    return dynamic_cast<allocator *>(object) != nullptr;
  case plugin_kind::compiler:
    return dynamic_cast<compiler *>(object) != nullptr;
  case plugin_kind::launcher:
    return dynamic_cast<launcher *>(object) != nullptr;
  case plugin_kind::rng:
    return dynamic_cast<rng *>(object) != nullptr;
  case plugin_kind::interop:
    return dynamic_cast<interop *>(object) != nullptr;
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

  // Safety before anything is read: the file, its real folder, and the folder it was named in.
  std::string unsafe = unsafe_reason(real, "plugin file");
  if (unsafe.empty())
    unsafe = unsafe_reason(real.parent_path(), "folder");
  if (unsafe.empty() && file.parent_path() != real.parent_path())
    unsafe = unsafe_reason(file.parent_path(), "folder");
  if (!unsafe.empty())
    return reject(std::move(unsafe));

  std::size_t section_bytes = 0;
  try {
    c.manifest = read_elf_manifest(real.string(), &section_bytes);
    c.has_manifest = true;
  } catch (const std::exception &e) {
    return reject(std::string("not a usable plugin: ") + e.what());
  }
  if (std::string problem = manifest_problem(c.manifest, section_bytes, c.path); !problem.empty())
    return reject(std::move(problem));

  const plugin_manifest &m = c.manifest;
  const auto kind = static_cast<plugin_kind>(m.kind);
  const std::string name = field_string(m.name);
  const entry_key key{kind, name};
  const int rank = source_rank(source);
  std::shared_ptr<const entry> previous;
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

  try {
    const std::vector<std::string> missing =
        missing_elf_exports(real.string(), {create_alias, destroy_alias});
    if (!missing.empty())
      return reject(who(m, c.path) + " does not export " + join(missing, "'") +
                    ": it was not built with CUPLUG_PLUGIN(...), or the symbols were hidden; " +
                    rebuild_advice);
  } catch (const std::exception &e) {
    return reject(std::string("not a usable plugin: ") + e.what());
  }

  // RTLD_NOW: a missing dependency (libnvrtc, libcurand) fails here, with its name, instead of
  // at the first call. RTLD_LOCAL: plugins do not see one another's symbols. dlopen first, for
  // dlerror's plain message; that handle is never closed, like every plugin handle.
  if (::dlopen(real.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
    const char *why = ::dlerror();
    return reject(who(m, c.path) + " could not be loaded (unavailable): " +
                  (why != nullptr ? why : "dlopen failed"));
  }
  std::shared_ptr<plugin_library> library;
  try {
    library = std::make_shared<plugin_library>(boost::dll::shared_library(
        real, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local));
  } catch (const std::exception &e) {
    return reject(who(m, c.path) + " could not be loaded (unavailable): " + e.what());
  }
  libraries.push_back(library); // kept even if refused below: its initialisers have run
  try {
    library->resolve();
  } catch (const std::exception &e) {
    return reject(who(m, c.path) + " does not provide its create/destroy pair: " + e.what() + "; " +
                  rebuild_advice);
  }

  auto e = std::make_shared<entry>();
  e->info = plugin_info{name,
                        kind,
                        c.path,
                        field_string(m.description),
                        field_string(m.version),
                        field_string(m.abi_tag),
                        source};
  e->rank = rank;
  e->library = library;
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
  options local(opts.values());
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
