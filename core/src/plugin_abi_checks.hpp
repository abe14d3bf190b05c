// The handshake's ABI comparisons, apart from the loader so that tests can feed them any values.
#pragma once

#include <cuplug/plugin_abi.hpp>

#include <cstdint>
#include <string>
#include <string_view>

// Not installed: the loader (plugin_loader.cpp) and its tests are the only users.

namespace cuplug::detail {

// Why a plugin built with C++ ABI tag `plugin_tag` cannot be loaded by a core tagged `core_tag`,
// or "" when it can. Tags must be equal, and a tag with a part that could not be identified
// ("unknown", see CUPLUG_ABI_TAG) never matches, not even an identical one. The text follows
// "plugin 'x' (path) " in the loader's message.
std::string abi_tag_problem(std::string_view plugin_tag, std::string_view core_tag);

// Why a plugin compiled against a driver table of `plugin_entries` entry points (from cuplug
// `plugin_cuplug_version`) cannot run with this core's table of `core_entries`, or "" when it
// can: the table is append-only, so only a longer one is a problem. Same message convention.
std::string driver_table_problem(std::uint32_t plugin_entries,
                                 std::string_view plugin_cuplug_version,
                                 std::uint32_t core_entries);

} // namespace cuplug::detail
