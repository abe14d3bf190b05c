// Small helpers shared by the compile cache's sources: option text and file times (not installed).
#pragma once

#include <sys/stat.h>

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

} // namespace cuplug::detail
