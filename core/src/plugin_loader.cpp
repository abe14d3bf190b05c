// Checks and loads one candidate plugin file: file safety, manifest handshake, exports, dlopen.
#include "plugin_loader.hpp"

#include "elf_manifest.hpp"
#include "plugin_abi_checks.hpp"

#include <cuplug/driver_api.hpp>

#include <dlfcn.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

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

} // namespace

std::string check_candidate(const fs::path &file, const fs::path &real, plugin_candidate &c) {
  // Safety before anything is read: the file, its real folder, and the folder it was named in.
  std::string unsafe = unsafe_reason(real, "plugin file");
  if (unsafe.empty())
    unsafe = unsafe_reason(real.parent_path(), "folder");
  if (unsafe.empty() && file.parent_path() != real.parent_path())
    unsafe = unsafe_reason(file.parent_path(), "folder");
  if (!unsafe.empty())
    return unsafe;

  std::size_t section_bytes = 0;
  try {
    c.manifest = read_elf_manifest(real.string(), &section_bytes);
    c.has_manifest = true;
  } catch (const std::exception &e) {
    return std::string("not a usable plugin: ") + e.what();
  }
  return manifest_problem(c.manifest, section_bytes, c.path);
}

loaded_library load_library(const fs::path &real, const plugin_candidate &c) {
  const plugin_manifest &m = c.manifest;
  loaded_library out;
  try {
    const std::vector<std::string> missing =
        missing_elf_exports(real.string(), {create_alias, destroy_alias});
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

  // RTLD_NOW: a missing dependency (libnvrtc, libcurand) fails here, with its name, instead of
  // at the first call. RTLD_LOCAL: plugins do not see one another's symbols. dlopen first, for
  // dlerror's plain message; that handle is never closed, like every plugin handle.
  if (::dlopen(real.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
    const char *why = ::dlerror();
    out.problem = who(m, c.path) +
                  " could not be loaded (unavailable): " + (why != nullptr ? why : "dlopen failed");
    return out;
  }
  try {
    out.library = std::make_shared<plugin_library>(boost::dll::shared_library(
        real, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local));
  } catch (const std::exception &e) {
    out.problem = who(m, c.path) + " could not be loaded (unavailable): " + e.what();
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
