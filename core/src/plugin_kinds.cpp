// Lookups over the plugin-kind table (names, ids, interface versions, defaults).
#include <cuplug/plugin_kinds.hpp>

namespace cuplug {

std::uint32_t interface_version(plugin_kind kind) noexcept {
  switch (kind) {
#define CUPLUG_KIND_CASE(name, id, version, default_backend)                                       \
  case plugin_kind::name:                                                                          \
    return version;
    CUPLUG_PLUGIN_KINDS(CUPLUG_KIND_CASE)
#undef CUPLUG_KIND_CASE
  }
  return 0;
}

const char *to_string(plugin_kind kind) noexcept {
  switch (kind) {
#define CUPLUG_KIND_CASE(name, id, version, default_backend)                                       \
  case plugin_kind::name:                                                                          \
    return #name;
    CUPLUG_PLUGIN_KINDS(CUPLUG_KIND_CASE)
#undef CUPLUG_KIND_CASE
  }
  return "unknown";
}

const char *default_backend(plugin_kind kind) noexcept {
  switch (kind) {
#define CUPLUG_KIND_CASE(name, id, version, default_backend)                                       \
  case plugin_kind::name:                                                                          \
    return default_backend;
    CUPLUG_PLUGIN_KINDS(CUPLUG_KIND_CASE)
#undef CUPLUG_KIND_CASE
  }
  return "";
}

std::optional<plugin_kind> plugin_kind_from_string(std::string_view name) noexcept {
  for (plugin_kind k : all_plugin_kinds)
    if (name == to_string(k))
      return k;
  return std::nullopt;
}

bool is_plugin_kind(std::uint32_t id) noexcept {
  for (plugin_kind k : all_plugin_kinds)
    if (id == static_cast<std::uint32_t>(k))
      return true;
  return false;
}

std::string plugin_kind_list() {
  std::string out;
  for (plugin_kind k : all_plugin_kinds)
    out += (out.empty() ? "" : ", ") + std::string(to_string(k));
  return out;
}

} // namespace cuplug
