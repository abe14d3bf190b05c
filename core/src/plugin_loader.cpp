// Checks and loads one candidate plugin file: file safety, manifest handshake, exports, dlopen.
#include "plugin_loader.hpp"

#include "elf_manifest.hpp"
#include "plugin_abi_checks.hpp"

#include <cuplug/driver_api.hpp>
#include <cuplug/toolkit.hpp>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <utility>

// CUPLUG_VERSION ("X.Y", from the project version in CMake) is for "rebuild it against cuplug
// X.Y" advice.

namespace fs = std::filesystem;

namespace cuplug::detail {

bool valid_name(const std::string &name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool known_kind(std::uint32_t kind) { return is_plugin_kind(kind); }

std::string join(const std::vector<std::string> &items, const char *quote) {
  std::string out;
  for (const std::string &s : items)
    out += (out.empty() ? "" : ", ") + (quote + s + quote);
  return out;
}

namespace {

constexpr const char *rebuild_advice = "rebuild it against cuplug " CUPLUG_VERSION;

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
        std::pair{"version", terminated(m.version)},
        std::pair{"cuplug_version", terminated(m.cuplug_version)}})
    if (!ok)
      return who(m, path) + " has a corrupt manifest: field '" + field +
             "' is not NUL-terminated; " + rebuild_advice;
  if (!known_kind(m.kind))
    return who(m, path) + " declares plugin kind " + std::to_string(m.kind) +
           ", which this cuplug does not know (it knows " + plugin_kind_list() +
           "): it needs a newer cuplug, or " + rebuild_advice;
  const auto kind = static_cast<plugin_kind>(m.kind);
  if (m.interface_version != interface_version(kind))
    return who(m, path) + " implements " + to_string(kind) + " interface version " +
           std::to_string(m.interface_version) + ", this cuplug provides " +
           std::to_string(interface_version(kind)) + ": " + rebuild_advice;
  if (std::string problem = abi_tag_problem(field_string(m.abi_tag), CUPLUG_ABI_TAG);
      !problem.empty())
    return who(m, path) + " " + problem;
  if (std::string problem = driver_table_problem(
          m.driver_api_entries, field_string(m.cuplug_version), driver_api_entries);
      !problem.empty())
    return who(m, path) + " " + problem;
  if (!valid_name(field_string(m.name)))
    return "plugin file " + path + " has the name '" + field_string(m.name) +
           "'; backend names are lowercase letters, digits and '_' (e.g. 'my_pool'): fix the "
           "name in its CUPLUG_PLUGIN(...)";
  return {};
}

// The newest GLIBCXX_3.4.N symbol version the libstdc++ of this process defines ("" when none is
// loaded): libstdc++ defines a symbol named after each of its versions, so dlvsym finds it.
std::string newest_glibcxx_version() {
  void *lib = ::dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr)
    return {};
  std::string newest;
  for (int n = 0; n < 100; ++n) {
    const std::string version = "GLIBCXX_3.4" + (n ? "." + std::to_string(n) : std::string());
    (void)::dlerror();
    (void)::dlvsym(lib, version.c_str(), version.c_str());
    if (::dlerror() == nullptr)
      newest = version;
  }
  ::dlclose(lib);
  return newest;
}

} // namespace

std::string check_candidate(const fs::path &file, plugin_candidate &c, checked_file &opened) {
  // Safety before anything is read. strict_parent: a folder others may add files to (even a
  // sticky one such as /tmp) is not a place to load plugins from.
  trust_rule rule;
  rule.what = "plugin file";
  rule.strict_parent = true;
  trusted_path checked = open_trusted(file.string(), rule);
  if (!checked.problem.empty())
    return checked.unsafe ? "refused: " + checked.problem : checked.problem;

  std::size_t section_bytes = 0;
  try {
    c.manifest = read_elf_manifest(checked.fd.get(), file.string(), &section_bytes);
    c.has_manifest = true;
  } catch (const std::exception &e) {
    return std::string("not a usable plugin: ") + e.what();
  }
  if (std::string problem = manifest_problem(c.manifest, section_bytes, c.path); !problem.empty())
    return problem;
  opened.fd = std::move(checked.fd);
  opened.real = checked.real;
  return {};
}

loaded_library load_library(checked_file &file, const plugin_candidate &c) {
  const plugin_manifest &m = c.manifest;
  loaded_library out;
  try {
    const std::vector<std::string> missing =
        missing_elf_exports(file.fd.get(), c.path, {create_alias, destroy_alias});
    if (!missing.empty()) {
      out.problem = who(m, c.path) + " does not export " + join(missing, "'") +
                    ": it was not built with CUPLUG_PLUGIN(...), or the symbols were hidden; " +
                    rebuild_advice;
      return out;
    }
  } catch (const std::exception &e) {
    out.problem = std::string("not a usable plugin: ") + e.what();
    return out;
  }

  // The descriptor checked, not the name: whatever the name leads to by now is not loaded.
  const std::string by_fd = "/proc/self/fd/" + std::to_string(file.fd.get());
  struct stat named {
  }, opened{};
  if (::stat(by_fd.c_str(), &named) != 0 || ::fstat(file.fd.get(), &opened) != 0 ||
      named.st_dev != opened.st_dev || named.st_ino != opened.st_ino) {
    out.problem = who(m, c.path) + " could not be loaded (unavailable): " + by_fd +
                  " does not lead to the file checked (is /proc mounted?); cuplug loads plugins "
                  "through /proc/self/fd so that what runs is what was checked";
    return out;
  }
  // dlerror names what dlopen was given; say the plugin's path instead.
  auto real_names = [&](std::string text) {
    for (std::size_t at = text.find(by_fd); at != std::string::npos;
         at = text.find(by_fd, at + c.path.size()))
      text.replace(at, by_fd.size(), c.path);
    return text;
  };

  // The toolkit libraries plugins link come from cuplug's toolkit search order, not only from the
  // dynamic loader's (cuplug/toolkit.hpp).
  (void)preload_toolkit_libraries();
  // RTLD_NOW: a missing dependency (libnvrtc, libcurand) fails here, with its name, instead of
  // at the first call. RTLD_LOCAL: plugins do not see one another's symbols. dlopen first, for
  // dlerror's plain message; that handle is never closed, like every plugin handle.
  if (::dlopen(by_fd.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
    const char *why = ::dlerror();
    const std::string text = real_names(why != nullptr ? why : "dlopen failed");
    out.problem = who(m, c.path) + " could not be loaded (unavailable): " + text +
                  missing_symbol_version_advice(text, newest_glibcxx_version());
    return out;
  }
  try {
    boost::dll::shared_library lib(by_fd, boost::dll::load_mode::rtld_now |
                                              boost::dll::load_mode::rtld_local);
    out.library = std::make_shared<plugin_library>(std::move(file.fd), std::move(lib));
  } catch (const std::exception &e) {
    // Loaded by the dlopen above and never unloaded: its name must stay its own.
    file.fd.release();
    out.problem = who(m, c.path) + " could not be loaded (unavailable): " + real_names(e.what());
    return out;
  }
  try {
    out.library->resolve();
  } catch (const std::exception &e) {
    out.problem = who(m, c.path) + " does not provide its create/destroy pair: " + e.what() + "; " +
                  rebuild_advice;
  }
  return out;
}

} // namespace cuplug::detail
