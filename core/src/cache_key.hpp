// The compile cache key's ingredients: normalised options and the user headers a source includes
// (not installed; the cache's sources and their tests use them).
#pragma once

#include <cuplug/compile_cache.hpp>

#include <string>
#include <vector>

namespace cuplug {

// Headers reachable from `source` through #include lines that resolve in `include_dirs`
// (searched in order; quoted includes of a header first look next to that header). Headers
// found nowhere in those dirs (the toolkit's, the system's) are not listed: the compiler
// version covers them. Computed includes (#include MACRO) cannot be followed.
std::vector<included_header> find_included_headers(const std::string &source,
                                                   const std::vector<std::string> &include_dirs);

// User include dirs of a request: request.include_dirs, then -I / --include-path options.
std::vector<std::string> user_include_dirs(const compile_request &request);

// Options as they enter the key: trimmed, empty ones dropped, split flag/value pairs joined,
// and those that cannot change the output dropped (-I dirs: the headers' content is keyed
// instead, so moving a tree keeps its entries; --keep).
std::vector<std::string> normalized_options(const std::vector<std::string> &options);

} // namespace cuplug
