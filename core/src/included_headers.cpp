// The include scanner: every file a preprocessor may read from a source, for compilers (NVRTC)
// that cannot say which files they read.
#include "compile_cache_detail.hpp"

#include <cuplug/compiler_support.hpp>
#include <cuplug/errors.hpp>

#include <sys/stat.h>

#include <cctype>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace cuplug {
namespace {
using detail::read_regular_file;
using detail::read_status;
using detail::trim;

constexpr std::size_t max_header_bytes = std::size_t(64) << 20;
constexpr std::size_t max_headers = 20000;
constexpr int max_macro_depth = 16;

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Phases 2 and 3 of translation as far as includes care: backslash-newline splices are joined
// (a backslash followed by blanks is no splice, as in NVRTC) and each comment becomes one space.
// String and character literals are kept, so a "/*" inside one starts nothing; raw strings
// R"x(...)x" are skipped whole. An unterminated quote ends at the line end (digit separators).
std::string clean_text(const std::string &raw) {
  std::string s;
  s.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\\' && i + 1 < raw.size() && raw[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (raw[i] == '\\' && i + 2 < raw.size() && raw[i + 1] == '\r' && raw[i + 2] == '\n') {
      i += 2;
      continue;
    }
    s.push_back(raw[i]);
  }
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n')
        ++i;
      out.push_back(' ');
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      std::size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 2;
      out.push_back(' ');
      continue;
    }
    if (c == 'R' && i + 1 < s.size() && s[i + 1] == '"' &&
        (i == 0 || !ident_char(s[i - 1]) || s[i - 1] == 'L' || s[i - 1] == 'u' || s[i - 1] == 'U' ||
         s[i - 1] == '8')) {
      std::size_t open = s.find('(', i + 2);
      if (open != std::string::npos && open - (i + 2) <= 16) {
        std::string close = ")" + s.substr(i + 2, open - (i + 2)) + "\"";
        std::size_t end = s.find(close, open + 1);
        std::size_t stop = end == std::string::npos ? s.size() : end + close.size();
        // Keep the line structure (a directive after the literal stays at a line start).
        out.push_back(' ');
        for (std::size_t k = i; k < stop; ++k)
          if (s[k] == '\n')
            out.push_back('\n');
        i = stop;
        continue;
      }
    }
    if (c == '"' || c == '\'') {
      out.push_back(c);
      ++i;
      while (i < s.size() && s[i] != c && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] != '\n')
          out.push_back(s[i++]);
        out.push_back(s[i++]);
      }
      if (i < s.size() && s[i] == c)
        out.push_back(s[i++]);
      continue;
    }
    out.push_back(c);
    ++i;
  }
  return out;
}

// What follows #include (or sits inside __has_include( )): a "name", a <name>, or macro tokens.
struct operand {
  enum kind { quoted, angle, computed, none } k = none;
  std::string text; // the name, or the tokens
};

operand read_operand(const std::string &line, std::size_t p, char stop = '\0') {
  while (p < line.size() && (line[p] == ' ' || line[p] == '\t'))
    ++p;
  operand o;
  if (p >= line.size())
    return o;
  if (line[p] == '"' || line[p] == '<') {
    char close = line[p] == '"' ? '"' : '>';
    std::size_t q = line.find(close, p + 1);
    if (q == std::string::npos || q == p + 1)
      return o;
    o.k = close == '"' ? operand::quoted : operand::angle;
    o.text = line.substr(p + 1, q - p - 1);
    return o;
  }
  std::size_t end = stop ? line.find(stop, p) : std::string::npos;
  o.k = operand::computed;
  o.text = trim(line.substr(p, end == std::string::npos ? std::string::npos : end - p));
  if (o.text.empty())
    o.k = operand::none;
  return o;
}

struct directive {
  enum kind { include, include_next, embed, probe } k;
  operand what;
};

struct file_facts {
  std::vector<directive> includes;
  std::vector<std::pair<std::string, std::string>> defines; // name -> body ("(" first: function)
};

file_facts read_facts(const std::string &raw) {
  file_facts f;
  std::string text = clean_text(raw);
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    // __has_include("x") and friends may sit in any line (#if, #elif, a #define body).
    for (const char *probe : {"__has_include", "__has_embed"}) {
      for (std::size_t at = line.find(probe); at != std::string::npos;
           at = line.find(probe, at + 1)) {
        std::size_t p = at + std::string(probe).size();
        if (line.compare(p, 5, "_next") == 0)
          p += 5;
        while (p < line.size() && (line[p] == ' ' || line[p] == '\t'))
          ++p;
        if (p < line.size() && line[p] == '(') {
          operand o = read_operand(line, p + 1, ')');
          if (o.k != operand::none)
            f.includes.push_back({directive::probe, o});
        }
      }
    }
    std::size_t p = line.find_first_not_of(" \t\r\f\v");
    if (p == std::string::npos || line[p] != '#')
      continue;
    p = line.find_first_not_of(" \t", p + 1);
    if (p == std::string::npos || !ident_start(line[p]))
      continue;
    std::size_t e = p;
    while (e < line.size() && ident_char(line[e]))
      ++e;
    std::string name = line.substr(p, e - p);
    if (name == "include" || name == "import" || name == "include_next" || name == "embed") {
      operand o = read_operand(line, e);
      if (o.k == operand::none)
        continue;
      directive::kind k = name == "include_next" ? directive::include_next
                          : name == "embed"      ? directive::embed
                                                 : directive::include;
      f.includes.push_back({k, o});
    } else if (name == "define") {
      std::size_t n = line.find_first_not_of(" \t", e);
      if (n == std::string::npos || !ident_start(line[n]))
        continue;
      std::size_t ne = n;
      while (ne < line.size() && ident_char(line[ne]))
        ++ne;
      std::string body = ne < line.size() && line[ne] == '(' ? "(" : trim(line.substr(ne));
      f.defines.emplace_back(line.substr(n, ne - n), body);
    }
  }
  return f;
}

std::string dir_of(const std::string &path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos)
    return {};
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string join(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

const char *special_file_kind(mode_t mode) {
  return S_ISFIFO(mode)   ? "a FIFO (named pipe)"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "a special file";
}

class scanner {
public:
  explicit scanner(const include_search &s) : search_(s) {
    for (const auto &m : s.macros) {
      auto eq = m.find('=');
      std::string name = trim(m.substr(0, eq));
      std::string body = eq == std::string::npos ? "1" : trim(m.substr(eq + 1));
      if (auto paren = name.find('('); paren != std::string::npos) {
        name = name.substr(0, paren);
        body = "(";
      }
      defines_[name].insert(body);
    }
  }

  compile_inputs run() {
    for (const auto &pre : search_.pre_includes) // found like a quoted include of the source
      resolve({directive::include, {operand::quoted, pre}}, std::string(), true);
    add_text(search_.source, dir_of(search_.source_name), search_.search_source_dir);
    drain();
    // Computed includes wait until every definition in sight is known. One may name a header
    // that defines the macro another one uses, so rounds repeat while they find anything new;
    // what still cannot be followed then makes the result unknown.
    while (out_.known) {
      std::size_t requests = requested_.size(), definitions = count_defines();
      std::string failure;
      for (const auto &c : computed_) {
        std::string why = resolve_computed(c);
        if (!why.empty() && failure.empty())
          failure = why;
      }
      drain();
      if (requested_.size() == requests && count_defines() == definitions) {
        if (!failure.empty())
          unknown("an include names its header through a macro cuplug cannot follow: " + failure);
        break;
      }
    }
    if (!out_.known)
      out_.files.clear(), out_.absent.clear();
    return std::move(out_);
  }

private:
  struct pending {
    std::string text;
    std::string dir;
    bool search_dir;
  };

  void unknown(const std::string &why) {
    if (out_.known) {
      out_.known = false;
      out_.unknown_reason = why;
    }
  }

  std::size_t count_defines() const {
    std::size_t n = 0;
    for (const auto &[_, bodies] : defines_)
      n += bodies.size();
    return n;
  }

  void add_text(const std::string &text, const std::string &dir, bool search_dir) {
    queue_.push_back({text, dir, search_dir});
  }

  void drain() {
    while (out_.known && !queue_.empty()) {
      pending p = std::move(queue_.front());
      queue_.pop_front();
      file_facts f = read_facts(p.text);
      for (auto &[name, body] : f.defines)
        defines_[name].insert(body);
      for (const auto &d : f.includes) {
        if (d.what.k == operand::computed)
          computed_.insert({d.k, d.what.text, p.dir, p.search_dir});
        else
          resolve(d, p.dir, p.search_dir);
      }
    }
  }

  // Every name a macro may expand to, over all its definitions; false when one is not a plain
  // "name", <name> or another such macro.
  bool expand(const std::string &tokens, int depth, std::vector<operand> &names, std::string &why) {
    if (depth > max_macro_depth) {
      why = "the macro chain through '" + tokens + "' is too deep";
      return false;
    }
    std::string t = trim(tokens);
    if (!t.empty() && (t[0] == '"' || t[0] == '<')) {
      operand o = read_operand(t, 0);
      std::size_t close = t.find(t[0] == '"' ? '"' : '>', 1);
      if (o.k == operand::none || close + 1 != t.size()) {
        why = "'" + t + "' is not a plain header name";
        return false;
      }
      names.push_back(o);
      return true;
    }
    bool plain_identifier = !t.empty() && ident_start(t[0]);
    for (char c : t)
      plain_identifier = plain_identifier && ident_char(c);
    if (!plain_identifier) {
      why = "'" + t + "' is not a header name nor a macro that names one";
      return false;
    }
    auto it = defines_.find(t);
    if (it == defines_.end()) {
      why = "the macro '" + t + "' is defined nowhere cuplug can see";
      return false;
    }
    for (const auto &body : it->second) {
      if (body == "(") {
        why = "'" + t + "' is a function-like macro";
        return false;
      }
      if (!expand(body, depth + 1, names, why))
        return false;
    }
    return true;
  }

  struct computed_include {
    directive::kind k;
    std::string tokens;
    std::string dir;
    bool search_dir;
    bool operator<(const computed_include &o) const {
      return std::tie(k, tokens, dir, search_dir) < std::tie(o.k, o.tokens, o.dir, o.search_dir);
    }
  };

  // Resolves what the include's macro expands to now; returns why it cannot, or "".
  std::string resolve_computed(const computed_include &c) {
    std::vector<operand> names;
    std::string why;
    if (!expand(c.tokens, 0, names, why))
      return why;
    for (const auto &n : names)
      resolve({c.k, n}, c.dir, c.search_dir);
    return {};
  }

  void resolve(const directive &d, const std::string &dir, bool search_dir) {
    if (!out_.known)
      return;
    const std::string &name = d.what.text;
    // Each (directive, place) is resolved once: cycles and diamonds end here.
    std::string request = std::to_string(d.k) + std::to_string(d.what.k) + "\n" + dir + "\n" +
                          (search_dir ? "1" : "0") + name;
    if (!requested_.insert(request).second)
      return;
    struct candidate {
      std::string path;
      bool toolkit;
    };
    std::vector<candidate> candidates;
    if (!name.empty() && name[0] == '/') {
      candidates.push_back({name, false});
    } else {
      if (d.what.k == operand::quoted && search_dir)
        candidates.push_back({join(dir, name), false});
      for (const auto &sd : search_.dirs)
        candidates.push_back({join(sd.path, name), sd.toolkit});
    }
    // include_next continues past the directory of the current file, which this generous reading
    // does not track: it takes every candidate.
    const bool take_all = d.k == directive::include_next;
    for (const auto &c : candidates) {
      struct stat st {};
      if (::stat(c.path.c_str(), &st) != 0) {
        note_absent(c.path);
        continue;
      }
      if (S_ISDIR(st.st_mode))
        continue; // a directory of that name is no header; the search goes on
      if (!c.toolkit)
        take(c.path, st, d.k != directive::embed, d.k != directive::probe);
      if (!take_all)
        return;
    }
  }

  void note_absent(const std::string &path) {
    if (absent_seen_.insert(path).second)
      out_.absent.push_back(path);
  }

  // `read`: the compiler opens it (an include or embed, not a __has_include probe).
  void take(const std::string &path, const struct stat &st, bool follow, bool read) {
    if (!S_ISREG(st.st_mode)) {
      // A FIFO blocks the compiler's read until a writer comes (forever, usually), a device like
      // /dev/zero never ends: refused before the compiler runs (NVRTC refuses what it can open,
      // /dev/null too, and its "cannot open" made cuplug fall back to nvcc, which reads on).
      if (read)
        throw compile_error("cannot compile: the source includes " + path + ", which is " +
                                special_file_kind(st.st_mode) +
                                ", not a regular file; a compiler reading it would wait forever "
                                "or never reach its end. Include regular files only",
                            "", "");
      unknown(path + " is not a regular file");
      return;
    }
    if (files_seen_.insert(path).second)
      out_.files.push_back(path);
    if (!follow || !inodes_.insert({st.st_dev, st.st_ino}).second)
      return;
    if (inodes_.size() > max_headers) {
      unknown("the source reaches more than " + std::to_string(max_headers) + " headers");
      return;
    }
    std::string text;
    struct stat now {};
    read_status r = read_regular_file(path, max_header_bytes, text, now);
    if (r == read_status::too_large) {
      unknown(path + " is larger than 64 MiB");
      return;
    }
    if (r != read_status::ok) {
      unknown(path + " could not be read");
      return;
    }
    add_text(text, dir_of(path), true);
  }

  const include_search &search_;
  compile_inputs out_{true, {}, {}, {}, {}};
  std::deque<pending> queue_;
  std::map<std::string, std::set<std::string>> defines_;
  std::set<computed_include> computed_;
  std::set<std::string> requested_;
  std::set<std::string> files_seen_;
  std::set<std::string> absent_seen_;
  std::set<std::pair<dev_t, ino_t>> inodes_;
};

} // namespace

compile_inputs scan_includes(const include_search &search) { return scanner(search).run(); }

} // namespace cuplug
