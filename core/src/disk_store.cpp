// The on-disk compile cache: directory checks, entry reads, atomic writes, LRU eviction.
#include "disk_store.hpp"

#include "cache_entry.hpp"
#include "compile_cache_detail.hpp"
#include "path_trust.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

namespace cuplug {
namespace fs = std::filesystem;
using detail::mtime_ns;
using detail::starts_with;

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// Creates `dir` and missing parents with mode 0700.
bool make_dirs(const std::string &dir, std::string &why) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec).lexically_normal();
  std::vector<fs::path> missing;
  for (fs::path q = p; !q.empty(); q = q.parent_path()) {
    struct stat st {};
    if (::stat(q.c_str(), &st) == 0)
      break;
    missing.push_back(q);
    if (q == q.root_path())
      break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
      why = "cannot create " + it->string() + ": " + errno_text(errno);
      return false;
    }
  }
  return true;
}

} // namespace

const char *to_string(disk_cache_status::state s) noexcept {
  switch (s) {
  case disk_cache_status::state::usable:
    return "usable";
  case disk_cache_status::state::disabled:
    return "disabled";
  case disk_cache_status::state::unsafe:
    return "unsafe";
  case disk_cache_status::state::unusable:
    return "unusable";
  }
  return "unknown";
}

disk_store::disk_store(const std::string &root) {
  status.directory = root;
  if (root.empty()) {
    status.state_ = disk_cache_status::state::unusable;
    status.reason = "no cache directory: set CUPLUG_CACHE_DIR or HOME";
  } else {
    check();
  }
}

void disk_store::check() {
  status.state_ = disk_cache_status::state::usable;
  status.reason.clear();
  entries = (fs::path(status.directory) / compile_cache::entries_subdir).string();
  // The rule every path cuplug trusts follows (path_trust.hpp), with this user as the only
  // owner: the root, the entries folder, every folder above them and every link on the way.
  detail::trust_rule rule;
  rule.expect = detail::trust_rule::target::directory;
  rule.what = "cache directory";
  rule.owner_must_be_me = true;
  rule.allow_private_group = false;
  for (const std::string &d : {status.directory, entries}) {
    detail::trusted_path checked = detail::open_trusted(d, rule);
    // Created only once every folder above the missing part was found trusted, so a link
    // someone else controls never makes us create folders where it points.
    std::string why;
    if (checked.missing) {
      if (!make_dirs(d, why)) {
        status.state_ = disk_cache_status::state::unusable;
        status.reason = why;
        return;
      }
      checked = detail::open_trusted(d, rule);
    }
    if (!checked.problem.empty()) {
      status.state_ =
          checked.unsafe ? disk_cache_status::state::unsafe : disk_cache_status::state::unusable;
      status.reason = checked.problem;
      return;
    }
  }
}

std::string disk_store::entry_path(const std::string &key) const {
  return entries + "/" + key + ".bin";
}

namespace {
// Reads exactly `n` bytes at `offset`; false on a short read or an error.
bool read_at(int fd, char *dst, std::size_t n, off_t offset) {
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, dst + got, n - got, offset + static_cast<off_t>(got));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    got += static_cast<std::size_t>(r);
  }
  return true;
}
} // namespace

bool disk_store::read(const std::string &key, cache_entry &entry) {
  // O_NONBLOCK: opening a FIFO planted under an entry's name must not wait for a writer.
  int fd = ::open(entry_path(key).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
            !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
            static_cast<unsigned long long>(st.st_size) <= max_entry_bytes;
  std::string bytes;
  if (ok) {
    const auto size = static_cast<std::size_t>(st.st_size);
    char head[entry_header_size];
    ok = size >= entry_header_size && read_at(fd, head, entry_header_size, 0) &&
         entry_header_matches(head, size, key);
    if (ok) {
      bytes.resize(size);
      ok = read_at(fd, bytes.data(), size, 0) && decode_entry(bytes, key, entry);
    }
  }
  if (ok)
    ::futimens(fd, nullptr); // a hit makes the entry recently used
  ::close(fd);
  return ok;
}

std::string disk_store::write(const std::string &key, const cache_entry &entry) {
  static std::atomic<unsigned> counter{0};
  std::string bytes = encode_entry(key, entry);
  if (bytes.size() > max_entry_bytes)
    return "the entry would be " + std::to_string(bytes.size() >> 20) +
           " MiB, over the 256 MiB an entry may have; it is kept in memory only";
  std::random_device rd;
  std::string tmp = entries + "/.tmp-" + std::to_string(::getpid()) + "-" +
                    std::to_string(counter++) + "-" + std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 && errno == ENOENT) { // the directory went away under us: make it again
    check();
    if (status.state_ != disk_cache_status::state::usable)
      return status.reason;
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  }
  if (fd < 0)
    return "cannot create " + tmp + ": " + errno_text(errno);
  std::size_t put = 0;
  int err = 0;
  while (put < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + put, bytes.size() - put);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    put += static_cast<std::size_t>(n);
  }
  // No fsync: a crash may leave a short file under the final name, which the checksum turns
  // into a miss; syncing every entry would cost more than the occasional recompile.
  if (::close(fd) != 0 && err == 0)
    err = errno;
  if (err == 0 && ::rename(tmp.c_str(), entry_path(key).c_str()) != 0)
    err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return "cannot write " + entry_path(key) + ": " + errno_text(err);
  }
  estimated_bytes += bytes.size();
  return {};
}

// Least recently used entries go until the store is under 90% of the cap. Temp files older
// than an hour are leftovers of killed processes and go too.
void disk_store::evict(std::size_t cap, const std::string &keep_key) {
  if (counted && estimated_bytes <= cap)
    return;
  struct file {
    std::string path;
    long long mtime;
    std::size_t size;
  };
  std::vector<file> files;
  std::size_t total = 0;
  auto now = std::chrono::system_clock::now().time_since_epoch();
  long long now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  std::error_code ec;
  for (fs::directory_iterator it(entries, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (starts_with(name, ".tmp-")) {
      if (now_ns - mtime_ns(st) > 3600LL * 1000000000LL)
        ::unlink(it->path().c_str());
      continue;
    }
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".bin") != 0)
      continue;
    total += static_cast<std::size_t>(st.st_size);
    if (name == keep_key + ".bin")
      continue;
    files.push_back({it->path().string(), mtime_ns(st), static_cast<std::size_t>(st.st_size)});
  }
  counted = true;
  estimated_bytes = total;
  if (total <= cap)
    return;
  std::sort(files.begin(), files.end(),
            [](const file &a, const file &b) { return a.mtime < b.mtime; });
  std::size_t target = cap / 10 * 9;
  for (const auto &f : files) {
    if (total <= target)
      break;
    if (::unlink(f.path.c_str()) == 0)
      total -= std::min(total, f.size);
  }
  estimated_bytes = total;
}

std::size_t disk_store::clear() {
  if (status.state_ != disk_cache_status::state::usable)
    return 0;
  std::size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(entries, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    bool ours = starts_with(name, ".tmp-") ||
                (name.size() > 4 && name.compare(name.size() - 4, 4, ".bin") == 0);
    if (ours && ::unlink(it->path().c_str()) == 0)
      ++removed;
  }
  estimated_bytes = 0;
  counted = false;
  return removed;
}

} // namespace cuplug
