// The on-disk compile cache of one root directory (not installed).
#pragma once

#include "cache_entry.hpp"

#include <cuplug/compile_cache.hpp>

#include <cstddef>
#include <mutex>
#include <string>

namespace cuplug {

// Layout and trust rules as described on compile_cache. Not synchronised by itself: callers hold
// `mutex` around every call and every field access after construction.
struct disk_store {
  // Checks (and creates) `root`; an empty root is unusable.
  explicit disk_store(const std::string &root);

  // (Re)creates the entries dir and checks ownership and modes; sets `status`.
  void check();
  std::string entry_path(const std::string &key) const;
  // True (and `entry` set) for a verified entry of `key`; a hit refreshes the file's mtime. Reads
  // no further than the header of a file that is not one: not regular (a FIFO is never waited
  // on), not private, over max_entry_bytes, or another key's.
  bool read(const std::string &key, cache_entry &entry);
  // Writes a temp file and renames it into place. Returns an error text, empty on success.
  std::string write(const std::string &key, const cache_entry &entry);
  // Brings the store under `cap` bytes, keeping `keep_key`'s entry.
  void evict(std::size_t cap, const std::string &keep_key);
  // Removes every entry and stray temp file; returns how many went (0 when not usable).
  std::size_t clear();

  disk_cache_status status;
  std::string entries; // <root>/compiler-v1
  bool warned = false;
  bool write_warned = false;
  std::mutex mutex;
  // Bytes on disk as last counted plus what this process wrote since; rescanned when over cap.
  std::size_t estimated_bytes = 0;
  bool counted = false;
};

} // namespace cuplug
