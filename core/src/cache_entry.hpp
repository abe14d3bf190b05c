// The compile cache's entry file format (not installed; the disk store and the tests that
// corrupt entries on purpose use it).
#pragma once

#include <cuplug/compiler.hpp>

#include <string>

namespace cuplug {

// The bytes of an entry file for `key` holding `image`.
std::string encode_cache_entry(const std::string &key, const compiled_image &image);
// False (and `image` untouched) when the bytes are not a complete, verified entry for `key`.
bool decode_cache_entry(const std::string &bytes, const std::string &key, compiled_image &image);

} // namespace cuplug
