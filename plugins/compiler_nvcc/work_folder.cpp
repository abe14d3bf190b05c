// A compile's private folder, locked while its compile runs; the sweep of those left unlocked.
#include "work_folder.hpp"

#include <cuplug/compiler_support.hpp>
#include <cuplug/errors.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

namespace cuplug::plugins {
namespace {
namespace fs = std::filesystem;

constexpr const char *running_prefix = "cuplug-nvcc-run-";
constexpr const char *new_prefix = "cuplug-nvcc-new-";

bool starts_with(const std::string &s, const char *prefix) { return s.rfind(prefix, 0) == 0; }

// A folder of this user (not a link to one), opened for its lock.
int open_own_folder(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (fd >= 0 && (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Kills this user's processes whose TMPDIR is `folder`: what a killed compile's nvcc started (it
// gave them that TMPDIR) and still runs.
void kill_processes_working_in(const std::string &folder) {
  const std::string marker = "TMPDIR=" + folder + '\0';
  const pid_t self = ::getpid();
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10));
    if (pid == self)
      continue;
    std::ifstream in(it->path() / "environ", std::ios::binary);
    std::string environ_text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
    if (('\0' + environ_text).find('\0' + marker) != std::string::npos)
      ::kill(pid, SIGKILL);
  }
}

} // namespace

work_folder::work_folder(const std::string &wanted, bool keep) {
  if (keep || !wanted.empty()) {
    path_ = make_work_directory(wanted, "cuplug-nvcc-");
    keep_ = true;
    return;
  }
  // Made under a name the sweep leaves alone, locked, then renamed to one it looks at: no sweep
  // can take a folder between its making and its locking.
  const std::string made = make_work_directory("", new_prefix);
  path_ = made;
  lock_fd_ = open_own_folder(made);
  if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return; // unlocked, it stays under the name the sweep takes only when old
  const fs::path p(made);
  const std::string suffix =
      p.filename().string().substr(std::char_traits<char>::length(new_prefix));
  const std::string running = (p.parent_path() / (running_prefix + suffix)).string();
  if (::rename(made.c_str(), running.c_str()) == 0)
    path_ = running;
}

std::string no_space_text(const std::string &folder) {
  const char *tmpdir = std::getenv("TMPDIR");
  return "no space is left on the file system of " + folder + " (" +
         (tmpdir && *tmpdir ? std::string("TMPDIR=") + tmpdir
                            : std::string("TMPDIR is unset: /tmp")) +
         "); free space there or set TMPDIR to a folder on another file system";
}

std::string work_folder::write(const std::string &name, const std::string &text) const {
  const std::string path = path_ + "/" + name;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int err = fd < 0 ? errno : 0;
  for (std::size_t done = 0; err == 0 && done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR)
      err = errno;
    else if (n > 0)
      done += static_cast<std::size_t>(n);
  }
  if (fd >= 0 && ::close(fd) != 0 && err == 0)
    err = errno;
  if (err == ENOSPC || err == EDQUOT)
    throw config_error("cannot write " + path + ": " + std::strerror(err) + "; " +
                       no_space_text(path_));
  if (err != 0)
    throw plugin_error("cannot write " + path + ": " + std::strerror(err));
  return path;
}

work_folder::~work_folder() {
  std::error_code ec;
  if (!keep_ && !path_.empty())
    fs::remove_all(path_, ec);
  if (lock_fd_ >= 0)
    ::close(lock_fd_);
}

void sweep_stale_work_folders() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char *tmpdir = std::getenv("TMPDIR");
    const std::string base = tmpdir && *tmpdir ? tmpdir : "/tmp";
    const auto hour_ago = std::chrono::system_clock::now() - std::chrono::hours(1);
    std::error_code ec;
    for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const bool running = starts_with(name, running_prefix);
      if (!running && !starts_with(name, new_prefix))
        continue;
      const std::string path = it->path().string();
      int fd = open_own_folder(path);
      if (fd < 0)
        continue;
      struct stat st {};
      const bool old_enough =
          running ||
          (::fstat(fd, &st) == 0 && std::chrono::system_clock::from_time_t(st.st_mtime) < hour_ago);
      if (old_enough && ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        kill_processes_working_in(path);
        std::error_code ignored;
        fs::remove_all(path, ignored);
      }
      ::close(fd);
    }
  });
}

} // namespace cuplug::plugins
