// A disk cache entry: the image, its key, and the inputs a hit must find unchanged (not installed).
#pragma once

#include "compile_inputs.hpp"

#include <cuplug/compiler.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace cuplug {

struct cache_entry {
  compiled_image image;
  std::string image_key; // 64 hex digits: the request key and what the compile read
  recorded_inputs inputs;
};

// Magic, format version, image format, request key, payload size: what a reader checks before it
// reads (or allocates for) the rest.
inline constexpr std::size_t entry_header_size = 8 + 4 + 4 + 64 + 8;
inline constexpr std::size_t entry_trailer_size = 32; // SHA-256 of everything before it
// No entry is written larger, so none larger is read: a huge file there is a miss, not an
// allocation of its size.
inline constexpr std::size_t max_entry_bytes = std::size_t(256) << 20;

std::string encode_entry(const std::string &key, const cache_entry &entry);

// True when the first entry_header_size bytes of a file of `file_size` bytes start an entry of
// this format for `key` whose announced size is the file's.
bool entry_header_matches(const char *head, std::uint64_t file_size, const std::string &key);

// False (and `entry` untouched) when `bytes` are not one complete, verified entry for `key`.
// Allocates in proportion to `bytes.size()`, whatever the lengths and counts inside claim.
bool decode_entry(const std::string &bytes, const std::string &key, cache_entry &entry);

// An entry holding just `image` (no recorded inputs): for tests that corrupt entries on purpose.
std::string encode_cache_entry(const std::string &key, const compiled_image &image);
// False (and `image` untouched) when the bytes are not a complete, verified entry for `key`.
bool decode_cache_entry(const std::string &bytes, const std::string &key, compiled_image &image);

} // namespace cuplug
