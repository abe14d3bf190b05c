// The handshake's ABI comparisons, apart from the loader so that tests can feed them any values.
#pragma once

#include <cuplug/plugin_abi.hpp>

#include <cstdint>
#include <string>
#include <string_view>

// Not installed: the loader (plugin_loader.cpp) and its tests are the only users.

namespace cuplug::detail {

// A C++ ABI tag's three parts (see CUPLUG_ABI_TAG): "itanium", "libstdc++-cxx11abi1",
// "x86_64-lp64". A tag of the first, compiler-first format
// ("gcc-cxxabi1017-libstdc++-cxx11abi1-x86_64") is read into the same parts, its compiler dropped;
// a part that cannot be read has "unknown" in it.
struct abi_parts {
  std::string cxxabi, stdlib, arch;
};
abi_parts parse_abi_tag(std::string_view tag);

// The compiler this core was built with, for advice: "GCC 12.2.0", "Clang 16.0.6 ...".
std::string core_compiler();

// Why a plugin built with C++ ABI tag `plugin_tag` cannot be loaded by a core tagged `core_tag`,
// or "" when it can: every part must be equal, and a tag with a part that could not be identified
// ("unknown") never matches, not even an identical one. The text follows "plugin 'x' (path) " in
// the loader's message and says what was found, what was expected and how to build the plugin.
std::string abi_tag_problem(std::string_view plugin_tag, std::string_view core_tag);

// dlopen's refusal of a plugin that needs a libstdc++ symbol version (GLIBCXX_*, CXXABI_*) the
// running libstdc++ lacks, explained: the version, the GCC that introduced it, the newest version
// here (`newest_glibcxx`, may be empty) and the two fixes; appended to dlerror's text. "" when
// `dlerror_text` is about something else.
std::string missing_symbol_version_advice(std::string_view dlerror_text,
                                          std::string_view newest_glibcxx);

// Why a plugin compiled against a driver table of `plugin_entries` entry points (from cuplug
// `plugin_cuplug_version`) cannot run with this core's table of `core_entries`, or "" when it
// can: the table is append-only, so only a longer one is a problem. Same message convention.
std::string driver_table_problem(std::uint32_t plugin_entries,
                                 std::string_view plugin_cuplug_version,
                                 std::uint32_t core_entries);

} // namespace cuplug::detail
