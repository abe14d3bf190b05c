// Stamps of the user headers a key read, so memory hits notice edited headers (not installed).
#pragma once

#include <cuplug/compile_cache.hpp>

#include <string>
#include <vector>

namespace cuplug {

// A user header as it was when the key was made.
struct header_stamp {
  std::string path;
  long long mtime_ns = 0;
  long long size = 0;
};

std::vector<header_stamp> stamps_of(const std::vector<included_header> &headers);

// False as soon as one header is gone or has another mtime or size; costs one stat() each.
bool headers_unchanged(const std::vector<header_stamp> &stamps);

} // namespace cuplug
