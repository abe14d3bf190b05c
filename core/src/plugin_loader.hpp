// Checks and loads one candidate plugin file: file safety, manifest handshake, exports, dlopen.
#pragma once

#include <cuplug/plugin_abi.hpp>
#include <cuplug/registry.hpp>

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

// Everything checked before any byte of `file` runs: that neither it (resolved to `real`), its
// real folder nor the folder it was named in can be replaced by someone else, and that its
// manifest matches this cuplug. Sets c.manifest and c.has_manifest when the manifest could be
// read, even if it is then refused (so "unknown backend" messages can name the refused file).
// Returns why the file is refused, or "" when it passed. Does not throw for a bad file.
std::string check_candidate(const std::filesystem::path &file, const std::filesystem::path &real,
                            plugin_candidate &c);

// What load_library made of a checked candidate. `library` is set once the library was opened,
// even when `problem` then refuses it: its static initialisers have run, so it must stay loaded.
struct loaded_library {
  std::shared_ptr<plugin_library> library;
  std::string problem; // "" when loaded and its create/destroy pair resolved
};

// Loads a candidate that passed check_candidate (c.manifest valid, c.path its absolute path):
// checks its exports without running it, then opens it with RTLD_NOW | RTLD_LOCAL and resolves
// the create/destroy pair. Does not throw for a bad file.
loaded_library load_library(const std::filesystem::path &real, const plugin_candidate &c);

} // namespace detail
} // namespace cuplug
