// The one rule for whether a file or folder cuplug acts on may be trusted (plugins, config file,
// cache).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

// Not installed: the loader, the config file and the compile cache are its users.
//
// A path is trusted when nobody but root and the current user could change what it leads to:
// every folder a name is looked up in and every link followed on the way must be owned by root
// or the current user and not writable by others (a sticky folder such as /tmp is fine on the
// way, since others cannot rename or delete what they do not own there), and so must the file
// or folder it ends at. This is the rule OpenSSH and sudo apply to their own files, and the
// path is walked one name at a time from "/" with O_NOFOLLOW, so what is returned open is what
// was checked, not something the name led to afterwards.

namespace cuplug::detail {

// An open file descriptor, closed when it goes out of scope.
class unique_fd {
public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd &&other) noexcept : fd_(other.release()) {}
  unique_fd &operator=(unique_fd &&other) noexcept;
  unique_fd(const unique_fd &) = delete;
  unique_fd &operator=(const unique_fd &) = delete;
  ~unique_fd();
  int get() const noexcept { return fd_; }
  int release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  explicit operator bool() const noexcept { return fd_ >= 0; }

private:
  int fd_ = -1;
};

// What a path must end at, and how strict the rule is for it.
struct trust_rule {
  enum class target { regular_file, directory };
  target expect = target::regular_file;
  // Names the object in messages: "plugin file", "config file", "cache directory".
  const char *what = "file";
  // Only the current user may own it (root's folder is not ours to write in): the cache.
  bool owner_must_be_me = false;
  // Group write is accepted when the group is the owner's private group (a "user private
  // group", umask 002), where it grants nobody else anything. The cache makes its own folders
  // 0700 and never needs it.
  bool allow_private_group = true;
  // The folder holding the object must not be writable by others even when it is sticky: a
  // plugin folder anyone can add files to is not one to load plugins from.
  bool strict_parent = false;
};

// What open_trusted found. `problem` is "" when the path is trusted; then `fd` is open on the
// object checked (O_RDONLY for a regular file, O_RDONLY | O_DIRECTORY for a folder, both
// O_CLOEXEC) and `st` is its fstat. Otherwise `fd` is closed and:
//  - `unsafe` is set when someone else could change the path (the caller refuses to use it),
//  - `missing` is set when a name on the way does not exist, every folder before it being
//    trusted (so it is safe to create it there),
//  - neither is set for other problems: relative path, wrong file type, link loop, I/O errors.
struct trusted_path {
  unique_fd fd;
  struct stat st {};
  std::string real; // the path with every link resolved
  std::string problem;
  bool unsafe = false;
  bool missing = false;
};

// Walks `path` (absolute) and opens what it leads to if `rule` lets cuplug trust it. Never
// blocks on a FIFO or device: the type is checked before the open, which is O_NONBLOCK. Never
// throws for a bad path (only std::bad_alloc).
trusted_path open_trusted(const std::string &path, const trust_rule &rule);

// The current user's home folder: $HOME when it is an absolute path, else the account's entry
// (a relative $HOME such as "." would make the current directory the home). "" if neither.
std::string user_home();

// "nobody", or "uid 4242" for an id without an account.
std::string user_name(uid_t uid);

} // namespace cuplug::detail
