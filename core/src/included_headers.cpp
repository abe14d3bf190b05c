// The user headers a source includes: include-line scanning, include dirs, change stamps.
#include "included_headers.hpp"

#include "cache_key.hpp"
#include "compile_cache_detail.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <utility>

namespace cuplug {
namespace fs = std::filesystem;
using detail::mtime_ns;
using detail::starts_with;
using detail::trim;

namespace {

bool read_file(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

bool is_regular_file(const std::string &path, struct stat &st) {
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The (quoted?, name) of every `#include "x"` / `#include <x>` line.
std::vector<std::pair<bool, std::string>> include_lines(const std::string &text) {
  std::vector<std::pair<bool, std::string>> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::size_t p = pos;
    auto skip_blanks = [&] {
      while (p < end && (text[p] == ' ' || text[p] == '\t'))
        ++p;
    };
    skip_blanks();
    if (p < end && text[p] == '#') {
      ++p;
      skip_blanks();
      if (text.compare(p, 7, "include") == 0) {
        p += 7;
        skip_blanks();
        if (p < end && (text[p] == '"' || text[p] == '<')) {
          char close = text[p] == '"' ? '"' : '>';
          std::size_t q = text.find(close, p + 1);
          if (q != std::string::npos && q < end && q > p + 1)
            out.emplace_back(close == '"', text.substr(p + 1, q - p - 1));
        }
      }
    }
    pos = end + 1;
  }
  return out;
}

} // namespace

std::vector<included_header> find_included_headers(const std::string &source,
                                                   const std::vector<std::string> &include_dirs) {
  std::vector<included_header> found;
  if (include_dirs.empty())
    return found;
  // Cycles and diamonds: each file once. Bounded so a pathological tree cannot hang a compile.
  constexpr std::size_t max_headers = 20000;
  std::set<std::string> seen;

  std::function<void(const std::string &, const std::string &, const std::string &)> scan;
  scan = [&](const std::string &text, const std::string &own_dir, const std::string &own_rel_dir) {
    for (const auto &[quoted, name] : include_lines(text)) {
      if (found.size() >= max_headers)
        return;
      std::string path, rel;
      struct stat st {};
      fs::path np(name);
      if (np.is_absolute()) {
        if (is_regular_file(name, st))
          path = rel = name;
      } else {
        if (quoted && !own_dir.empty()) {
          std::string candidate = (fs::path(own_dir) / np).string();
          if (is_regular_file(candidate, st)) {
            path = candidate;
            rel = (fs::path(own_rel_dir) / np).lexically_normal().string();
          }
        }
        for (std::size_t i = 0; path.empty() && i < include_dirs.size(); ++i) {
          std::string candidate = (fs::path(include_dirs[i]) / np).string();
          if (is_regular_file(candidate, st)) {
            path = candidate;
            rel = np.lexically_normal().string();
          }
        }
      }
      if (path.empty())
        continue; // a toolkit or system header: keyed by the compiler version
      std::string canonical = fs::absolute(path).lexically_normal().string();
      if (!seen.insert(canonical).second)
        continue;
      included_header h;
      h.name = rel;
      h.path = canonical;
      h.size = static_cast<long long>(st.st_size);
      h.mtime_ns = mtime_ns(st);
      if (!read_file(canonical, h.content))
        continue;
      found.push_back(std::move(h));
      std::string text_copy = found.back().content;
      scan(text_copy, fs::path(canonical).parent_path().string(),
           fs::path(rel).parent_path().string());
    }
  };
  scan(source, {}, {});
  return found;
}

std::vector<std::string> user_include_dirs(const compile_request &request) {
  std::vector<std::string> dirs = request.include_dirs;
  const auto &o = request.options;
  for (std::size_t i = 0; i < o.size(); ++i) {
    std::string t = trim(o[i]);
    if ((t == "-I" || t == "--include-path") && i + 1 < o.size()) {
      dirs.push_back(trim(o[++i]));
    } else if (starts_with(t, "--include-path=")) {
      dirs.push_back(t.substr(15));
    } else if (starts_with(t, "-I")) {
      dirs.push_back(t.substr(t.size() > 2 && t[2] == '=' ? 3 : 2));
    }
  }
  return dirs;
}

std::vector<header_stamp> stamps_of(const std::vector<included_header> &headers) {
  std::vector<header_stamp> stamps;
  for (const auto &h : headers)
    stamps.push_back({h.path, h.mtime_ns, h.size});
  return stamps;
}

bool headers_unchanged(const std::vector<header_stamp> &stamps) {
  for (const auto &s : stamps) {
    struct stat st {};
    if (::stat(s.path.c_str(), &st) != 0 || mtime_ns(st) != s.mtime_ns ||
        static_cast<long long>(st.st_size) != s.size)
      return false;
  }
  return true;
}

} // namespace cuplug
