// Discovery: where the registry looks for plugin files, apart from what it does with them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

// Not installed: the registry (core/src/registry.cpp) is this file's only user.

namespace cuplug::detail {

// One place searched at first use.
struct search_entry {
  std::string path;
  std::string source;  // "CUPLUG_PLUGIN_PATH" or "package"
  std::string problem; // non-empty: not searched (a relative CUPLUG_PLUGIN_PATH entry), and why
};

// The places searched at first use, highest precedence first: each entry of CUPLUG_PLUGIN_PATH
// (relative ones only with their problem, so that what loads never depends on the current
// directory), then the package's plugin folders that exist.
std::vector<search_entry> default_search_path();

// What registry::load(path) looks at: the file itself, or every lib*.so of a folder, sorted.
struct candidate_files {
  std::filesystem::path given; // `path` made absolute and normalised
  std::vector<std::filesystem::path> files;
  std::string problem; // non-empty: nothing to look at, and why
};
// `source` only shapes the messages ("CUPLUG_PLUGIN_PATH entry '...' does not exist").
candidate_files find_candidates(const std::string &path, const std::string &source);

// The folder of the package's own plugins: <pkg>/plugins beside the <pkg>/lib folder holding
// libcuplug_core.so (build tree, wheel), or lib/cuplug/plugins beside it (CMake install).
std::string package_plugin_dir();

} // namespace cuplug::detail
