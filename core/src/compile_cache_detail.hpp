// Small helpers shared by the compile cache's sources: option text, file times, capped reads
// (not installed).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>
#include <string_view>

namespace cuplug::detail {

// `s` without leading and trailing blanks and line ends.
inline std::string trim(const std::string &s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos)
    return {};
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

inline bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// A file's modification time in nanoseconds: what header stamps compare and eviction orders by.
inline long long mtime_ns(const struct stat &st) {
  return static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

inline long long ctime_ns(const struct stat &st) {
  return static_cast<long long>(st.st_ctim.tv_sec) * 1000000000LL + st.st_ctim.tv_nsec;
}

enum class read_status { ok, missing, not_regular, too_large, error };

// Reads a whole regular file of at most `max_bytes`, never blocking on what is not one: the file
// type and size are checked on the open descriptor (opened non-blocking, so a FIFO cannot hang
// the open) before anything is read. `st` receives the file's stat.
inline read_status read_regular_file(const std::string &path, std::size_t max_bytes,
                                     std::string &out, struct stat &st, int extra_flags = 0) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | extra_flags);
  if (fd < 0)
    return errno == ENOENT || errno == ENOTDIR ? read_status::missing : read_status::error;
  read_status result = read_status::ok;
  if (::fstat(fd, &st) != 0) {
    result = read_status::error;
  } else if (!S_ISREG(st.st_mode)) {
    result = read_status::not_regular;
  } else if (static_cast<unsigned long long>(st.st_size) > max_bytes) {
    result = read_status::too_large;
  } else {
    out.assign(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    // One byte more than announced: a file that grew since fstat is not what was checked.
    char extra = 0;
    while (true) {
      char *dst = got < out.size() ? out.data() + got : &extra;
      std::size_t want = got < out.size() ? out.size() - got : 1;
      ssize_t n = ::read(fd, dst, want);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        result = read_status::error;
        break;
      }
      if (n == 0) {
        if (got != out.size())
          result = read_status::error; // shrank while read
        break;
      }
      if (got >= out.size()) {
        result = read_status::error; // grew while read
        break;
      }
      got += static_cast<std::size_t>(n);
    }
  }
  ::close(fd);
  if (result != read_status::ok)
    out.clear();
  return result;
}

} // namespace cuplug::detail
