// Checks and loads one candidate plugin file: file safety, manifest handshake, exports, dlopen.
#pragma once

#include <cuplug/plugin_abi.hpp>
#include <cuplug/registry.hpp>

#include "path_trust.hpp"

#include <boost/dll/shared_library.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

// Not installed: the registry is this file's only user, and nothing here is a public contract.

namespace cuplug {

// One loaded plugin library. Never unloaded: the registry (leaked) keeps every one it loaded,
// because objects, static data and exception types of a plugin may outlive any owner we track.
class plugin_library {
public:
  // `file` is the descriptor the library was opened through ("/proc/self/fd/N"): it stays open
  // as long as the library is loaded, because dlopen matches loaded libraries by name, and a
  // reused descriptor number would otherwise make a later plugin's dlopen return this one.
  plugin_library(detail::unique_fd file, boost::dll::shared_library lib)
      : file_(std::move(file)), library_(std::move(lib)) {}
  // Finds the create/destroy pair; throws (naming the symbol) if either is missing.
  void resolve() {
    create_ = &library_.get_alias<create_fn>(create_alias);
    destroy_ = &library_.get_alias<destroy_fn>(destroy_alias);
  }
  create_fn *create() const { return create_; }
  destroy_fn *destroy() const { return destroy_; }

private:
  detail::unique_fd file_; // declared first, so it is closed after the library is unloaded
  boost::dll::shared_library library_;
  create_fn *create_ = nullptr;
  destroy_fn *destroy_ = nullptr;
};

namespace detail {

// Backend names are lowercase letters, digits and '_': the same rule for plugin manifests and
// for builtins, so a name means the same thing wherever it came from.
bool valid_name(const std::string &name);
// Whether a manifest's kind field (any number, read from a file) names a kind this cuplug knows.
bool known_kind(std::uint32_t kind);

// Manifest text fields are fixed-size arrays from an untrusted file: never read past them.
template <std::size_t N> bool terminated(const char (&field)[N]) {
  return std::memchr(field, '\0', N) != nullptr;
}
template <std::size_t N> std::string field_string(const char (&field)[N]) {
  return std::string(field, strnlen(field, N));
}

// "a, b, c", each item wrapped in `quote`; for the lists in error messages.
std::string join(const std::vector<std::string> &items, const char *quote = "");

// A plugin file as check_candidate opened it: everything later reads and loads this descriptor,
// never the name again, so what runs is what was checked.
struct checked_file {
  unique_fd fd;
  std::string real; // its path with links resolved, for messages
};

// Everything checked before any byte of `file` runs: that it is a regular file nobody but root
// and the current user could change (it, every folder on the way and every link followed: see
// path_trust.hpp), and that its manifest matches this cuplug. On success `opened` holds the
// file, open. Sets c.manifest and c.has_manifest when the manifest could be read, even if it is
// then refused (so "unknown backend" messages can name the refused file). Returns why the file
// is refused, or "" when it passed. Does not throw for a bad file.
std::string check_candidate(const std::filesystem::path &file, plugin_candidate &c,
                            checked_file &opened);

// What load_library made of a checked candidate. `library` is set once the library was opened,
// even when `problem` then refuses it: its static initialisers have run, so it must stay loaded.
struct loaded_library {
  std::shared_ptr<plugin_library> library;
  std::string problem; // "" when loaded and its create/destroy pair resolved
};

// Loads a candidate that passed check_candidate (c.manifest valid, c.path its absolute path)
// from the descriptor it opened: checks its exports without running it, then opens it with
// RTLD_NOW | RTLD_LOCAL through /proc/self/fd and resolves the create/destroy pair. Takes the
// descriptor over when the library loads. Does not throw for a bad file.
loaded_library load_library(checked_file &file, const plugin_candidate &c);

} // namespace detail
} // namespace cuplug
