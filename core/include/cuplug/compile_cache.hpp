// The compile cache: compiled images kept in memory per request and on disk per content key.
#pragma once

#include <cuplug/compiler.hpp>
#include <cuplug/registry.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cuplug {

// Bumped when the entry layout or the key recipe changes; older entries then simply miss.
inline constexpr std::uint32_t compile_cache_format_version = 2;

// A compile request bound to the compiler that serves it, hashed once so that repeated lookups
// with the same object cost no more than a hash-table probe.
class cache_request {
public:
  cache_request(plugin_ptr<compiler> backend, compile_request request);

  const compile_request &request() const noexcept { return request_; }
  compiler &backend() const noexcept { return *backend_; }
  const plugin_ptr<compiler> &backend_ptr() const noexcept { return backend_; }
  // "<backend name> <backend version>": the compiler's part of the key.
  const std::string &backend_id() const noexcept { return backend_id_; }
  std::size_t hash() const noexcept { return hash_; }
  bool same_as(const cache_request &other) const noexcept;

private:
  plugin_ptr<compiler> backend_;
  compile_request request_;
  std::string backend_id_;
  std::size_t hash_ = 0;
};

// The request key, SHA-256 (hex) over what the request says: cache format version, backend name
// and version, arch, code, target format, relocatable and debug flags, the program, normalised
// options, include dirs, source name, source, name expressions. It names the disk entry; the
// files and variables the compile read are recorded in the entry and must be unchanged for a hit
// (see compile_cache). Reads no file.
std::string compile_cache_key(const cache_request &request);

// Where a compile may look and store.
struct cache_policy {
  bool memory = true;    // the in-process cache
  bool disk = true;      // the on-disk cache
  std::string directory; // empty: $CUPLUG_CACHE_DIR, else $XDG_CACHE_HOME/cuplug or ~/.cache/cuplug
};

enum class cache_hit { none, memory, disk };
const char *to_string(cache_hit hit) noexcept;

// A compiled image and where it came from. `key` identifies the image: the request key and the
// content of what the compile read (equal keys, equal images). `warning`, when set, is said once
// per process per directory (an unsafe or unusable cache directory); the Python layer turns it
// into a warning. `not_cached` says why a compiled image was kept in no layer (its inputs could
// not be recorded, e.g. a computed include NVRTC's scan cannot follow).
struct cache_result {
  std::shared_ptr<const compiled_image> image;
  cache_hit hit = cache_hit::none;
  std::string key;
  std::string warning;
  std::string not_cached;
};

// State of one disk cache directory.
struct disk_cache_status {
  enum class state { usable, disabled, unsafe, unusable };
  state state_ = state::disabled;
  std::string directory; // root given or defaulted; entries live in <directory>/compiler-v1
  std::string reason;    // why it is not usable
};
const char *to_string(disk_cache_status::state s) noexcept;

// The process-wide cache. Thread-safe. CUPLUG_DISABLE_CACHE=1 (read on every compile) turns off
// both layers; a request with keep_files passes both by. Each compile reports what it read
// (compile_inputs): files, probed absent paths, environment variables. The cache records them
// with content hashes; a hit in either layer needs each still the same (a stat, or a hash when
// the stat differs), so an edited header is a miss however it was reached. A compile whose
// inputs cannot be recorded is kept in neither layer. Disk entries:
// <root>/compiler-v1/<request key>.bin, files 0600 in dirs 0700 owned by the user; a directory
// owned by someone else or writable by group/others is not used. Entries carry a magic, the
// format version, the key and a SHA-256 checksum; anything that does not verify, is not a regular
// file, or is over 256 MiB is a miss (read no further than its header) and gets rewritten. Writes
// go to a temp file renamed into place, so concurrent writers of one key leave one complete entry.
// The disk size is capped (CUPLUG_CACHE_MAX_SIZE, default 1 GiB) by evicting least recently used
// entries (a hit refreshes the entry's mtime).
class compile_cache {
public:
  static compile_cache &instance();

  // The in-memory entry for a request seen before, or null. Touches the file system only to
  // re-check (stat) what the compile read; a changed file is a miss. A hit is logged (debug).
  std::shared_ptr<const cache_result> find(const cache_request &request);

  // Memory, then disk, then the compiler (storing in both). Throws what the compiler throws.
  // Logs (component compile) an info line when the compiler starts and one when it ends, with
  // the duration and what was stored; a cache hit is one debug line. The caller must hold no
  // lock: the start line is passed on at once (log_unlocked), which may wait for Python's GIL.
  cache_result compile(const cache_request &request, const cache_policy &policy = {});

  // Checks (and creates) a cache root; "" = the default root.
  disk_cache_status disk_status(const std::string &directory = {});

  void clear_memory();
  std::size_t memory_entries() const;
  // Removes every entry (and stray temp file) under a root; returns how many files went.
  std::size_t clear_disk(const std::string &directory = {});

  static bool disabled_by_environment();  // CUPLUG_DISABLE_CACHE set to a true value
  static std::string default_directory(); // the root used when none is given
  static std::size_t max_disk_bytes();    // CUPLUG_CACHE_MAX_SIZE or 1 GiB
  static constexpr const char *entries_subdir = "compiler-v1";

  ~compile_cache();
  compile_cache(const compile_cache &) = delete;
  compile_cache &operator=(const compile_cache &) = delete;

private:
  compile_cache();
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace cuplug
