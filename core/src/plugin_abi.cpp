// The handshake's ABI comparisons: C++ ABI tags and the size of the driver table.
#include "plugin_abi_checks.hpp"

namespace cuplug::detail {
namespace {

bool unidentified(std::string_view tag) { return tag.find("unknown") != std::string_view::npos; }

} // namespace

std::string abi_tag_problem(std::string_view plugin_tag, std::string_view core_tag) {
  const std::string plugin(plugin_tag), core(core_tag);
  if (unidentified(core))
    return "cannot be checked: this cuplug was built with a compiler, C++ ABI, standard library "
           "or architecture it cannot identify (ABI tag '" +
           core +
           "'), and an unidentified ABI never matches, so no plugin is loaded: rebuild cuplug "
           "with GCC or Clang on x86_64 or aarch64";
  if (unidentified(plugin))
    return "was built with ABI tag '" + plugin +
           "': its compiler, C++ ABI, standard library or architecture could not be identified, "
           "and an unidentified ABI never matches (not even an identical one): rebuild it with "
           "the compiler and standard library cuplug was built with (ABI tag '" +
           core + "')";
  if (plugin != core)
    return "was built with ABI tag '" + plugin + "', this cuplug has '" + core +
           "' (compiler family, C++ ABI, standard library and architecture must match): rebuild "
           "it with the compiler and standard library cuplug was built with";
  return {};
}

std::string driver_table_problem(std::uint32_t plugin_entries,
                                 std::string_view plugin_cuplug_version,
                                 std::uint32_t core_entries) {
  if (plugin_entries <= core_entries)
    return {};
  const std::string built_with = plugin_cuplug_version.empty()
                                     ? std::string("a newer cuplug")
                                     : "cuplug " + std::string(plugin_cuplug_version);
  return "was built against " + built_with + ", whose CUDA driver table has " +
         std::to_string(plugin_entries) +
         " entry points; this cuplug (" CUPLUG_VERSION_STRING ") has " +
         std::to_string(core_entries) +
         ", so the plugin could call entry points that are not there: rebuild it against "
         "cuplug " CUPLUG_VERSION_STRING ", or upgrade cuplug";
}

} // namespace cuplug::detail
