// The table of plugin kinds: adding a kind is one line here (plus its interface header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// X(name, id, interface_version, default_backend), in the order kinds are shown. From each line:
//   - `name` is the enum value plugin_kind::name, the interface class cuplug::name (declared in
//     <cuplug/name.hpp>), the string "name", the variable CUPLUG_NAME, the config file's
//     [backends] key and [name.<backend>] tables, and cuplug.use(name=...);
//   - `id` is the number plugin manifests carry: never reuse or renumber one;
//   - `interface_version` is bumped when the interface class changes incompatibly (a plugin built
//     against another version of its kind is refused);
//   - `default_backend` is the built-in choice when nothing else chooses. It may name a plugin
//     that is not installed; that default is then shown as unavailable, with the reason.
// tests/CMakeLists.txt reads the names from this table too (the variables tests clear).
#define CUPLUG_PLUGIN_KINDS(X)                                                                     \
  X(allocator, 1, 2, "device")                                                                     \
  X(compiler, 2, 2, "nvrtc")                                                                       \
  X(launcher, 3, 2, "driver")                                                                      \
  X(rng, 4, 2, "curand")                                                                           \
  X(interop, 5, 2, "gl")

namespace cuplug {

#define CUPLUG_KIND_ENUM(name, id, version, default_backend) name = id,
enum class plugin_kind : std::uint32_t { CUPLUG_PLUGIN_KINDS(CUPLUG_KIND_ENUM) };
#undef CUPLUG_KIND_ENUM

// allocator_interface_version, ...: what CUPLUG_PLUGIN(kind, ...) writes into the manifest.
#define CUPLUG_KIND_VERSION(name, id, version, default_backend)                                    \
  inline constexpr std::uint32_t name##_interface_version = version;
CUPLUG_PLUGIN_KINDS(CUPLUG_KIND_VERSION)
#undef CUPLUG_KIND_VERSION

// Every kind, in the table's order.
#define CUPLUG_KIND_VALUE(name, id, version, default_backend) plugin_kind::name,
inline constexpr plugin_kind all_plugin_kinds[] = {CUPLUG_PLUGIN_KINDS(CUPLUG_KIND_VALUE)};
#undef CUPLUG_KIND_VALUE

[[nodiscard]] std::uint32_t interface_version(plugin_kind kind) noexcept;
// "allocator"; "unknown" for a value outside the table.
[[nodiscard]] const char *to_string(plugin_kind kind) noexcept;
// The built-in default backend of a kind ("device" for allocator).
[[nodiscard]] const char *default_backend(plugin_kind kind) noexcept;
// The kind named `name`, or nullopt.
[[nodiscard]] std::optional<plugin_kind> plugin_kind_from_string(std::string_view name) noexcept;
// Whether `id` (a manifest's kind field: any number, read from a file) is a kind of the table.
[[nodiscard]] bool is_plugin_kind(std::uint32_t id) noexcept;
// "allocator, compiler, launcher, rng, interop", for messages that list the kinds.
[[nodiscard]] std::string plugin_kind_list();

} // namespace cuplug
