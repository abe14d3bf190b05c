// The compile cache key's ingredients (not installed; the cache's sources and their tests use it).
#pragma once

#include <cuplug/compile_cache.hpp>

#include <string>
#include <vector>

namespace cuplug {

// Options as they enter the key: trimmed, empty ones dropped, split flag/value pairs joined
// (-D X, -I dir), and those that cannot change the output dropped (--keep, --keep-dir).
std::vector<std::string> normalized_options(const std::vector<std::string> &options);

} // namespace cuplug
