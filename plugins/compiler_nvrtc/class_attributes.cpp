// Layout attributes after a class body moved to its class key (see class_attributes.hpp).
#include "class_attributes.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <vector>

namespace cuplug::plugins {

namespace {

constexpr std::size_t npos = std::string::npos;

struct token {
  std::size_t begin, end; // in the source
  std::string text;
};

struct macro {
  bool function = false;
  std::vector<std::string> params;
  std::vector<std::string> body;
};

using macro_table = std::map<std::string, macro>;

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident(const std::string &t) { return !t.empty() && ident_start(t[0]); }

// The end of the quoted literal whose opening quote is at i (past its closing quote; at the end
// of the line for an unterminated one).
std::size_t quoted_end(const std::string &s, std::size_t i) {
  const char quote = s[i];
  for (++i; i < s.size() && s[i] != '\n'; ++i) {
    if (s[i] == '\\')
      ++i;
    else if (s[i] == quote)
      return i + 1;
  }
  return i;
}

// The end of the raw string literal whose '"' is at i: R"delim( ... )delim".
std::size_t raw_string_end(const std::string &s, std::size_t i) {
  const std::size_t open = s.find('(', i);
  if (open == npos)
    return s.size();
  const std::string close = ")" + s.substr(i + 1, open - i - 1) + "\"";
  const std::size_t at = s.find(close, open);
  return at == npos ? s.size() : at + close.size();
}

void define(const std::vector<token> &line, macro_table &macros);

// C++ tokens of `s`, comments and whitespace left out. With `macros`, preprocessing directives are
// left out too, their #define / #undef recorded there (in source order; a later #define wins).
std::vector<token> lex(const std::string &s, macro_table *macros) {
  std::vector<token> out;
  bool line_start = true;
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    const char c = s[i];
    const char next = i + 1 < n ? s[i + 1] : '\0';
    if (c == '\n') {
      line_start = true;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c)) || (c == '\\' && next == '\n')) {
      i += c == '\\' ? 2 : 1;
    } else if (c == '/' && next == '*') {
      const std::size_t end = s.find("*/", i + 2);
      i = end == npos ? n : end + 2;
    } else if (c == '/' && next == '/') {
      while (i < n && s[i] != '\n')
        i += s[i] == '\\' && i + 1 < n ? 2 : 1;
    } else if (c == '#' && line_start && macros) {
      // A directive: to the end of its logical line, comments and continuations included.
      std::size_t end = i + 1;
      while (end < n && s[end] != '\n') {
        if (s[end] == '\\' && end + 1 < n)
          end += 2;
        else if (s[end] == '/' && end + 1 < n && s[end + 1] == '*') {
          const std::size_t close = s.find("*/", end + 2);
          end = close == npos ? n : close + 2;
        } else if (s[end] == '"' || s[end] == '\'')
          end = quoted_end(s, end);
        else
          ++end;
      }
      const std::string text = s.substr(i + 1, end - i - 1);
      define(lex(text, nullptr), *macros);
      i = end;
    } else {
      line_start = false;
      std::size_t end = i + 1;
      if (ident_start(c)) {
        while (end < n && ident_char(s[end]))
          ++end;
        const std::string word = s.substr(i, end - i);
        const bool prefix = word == "u8" || word == "u" || word == "U" || word == "L";
        const bool raw =
            word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR";
        if (end < n && s[end] == '"' && raw)
          end = raw_string_end(s, end);
        else if (end < n && (s[end] == '"' || s[end] == '\'') && prefix)
          end = quoted_end(s, end);
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && std::isdigit(static_cast<unsigned char>(next)))) {
        while (end < n) { // a pp-number: 1.5e+3f, 0x1p-2, 1'000
          const char d = s[end];
          const char before = s[end - 1];
          if (ident_char(d) || d == '.' ||
              ((d == '+' || d == '-') && std::string("eEpP").find(before) != npos) ||
              (d == '\'' && end + 1 < n && ident_char(s[end + 1])))
            ++end;
          else
            break;
        }
      } else if (c == '"' || c == '\'') {
        end = quoted_end(s, i);
      } else if (c == ':' && next == ':') {
        end = i + 2;
      }
      out.push_back({i, end, s.substr(i, end - i)});
      i = end;
    }
  }
  return out;
}

// Records `#define NAME body`, `#define NAME(params) body` and `#undef NAME` (the tokens of a
// directive past its '#').
void define(const std::vector<token> &line, macro_table &macros) {
  if (line.size() < 2 || !is_ident(line[1].text))
    return;
  const std::string &name = line[1].text;
  if (line[0].text == "undef") {
    macros.erase(name);
    return;
  }
  if (line[0].text != "define")
    return;
  macro m;
  std::size_t body = 2;
  // Function-like only when '(' touches the name.
  if (line.size() > 2 && line[2].text == "(" && line[2].begin == line[1].end) {
    m.function = true;
    for (body = 3; body < line.size() && line[body].text != ")"; ++body)
      if (line[body].text != ",")
        m.params.push_back(line[body].text);
    ++body;
  }
  for (; body < line.size(); ++body)
    m.body.push_back(line[body].text);
  macros[name] = std::move(m);
}

// The index of the bracket closing the one at t[open] ('(', '[', '{'), counting all three kinds;
// npos when it is not closed.
std::size_t closing(const std::vector<std::string> &t, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < t.size(); ++i) {
    const std::string &x = t[i];
    if (x == "(" || x == "[" || x == "{")
      ++depth;
    else if ((x == ")" || x == "]" || x == "}") && --depth == 0)
      return i;
  }
  return npos;
}

bool followed_by_paren(const std::vector<std::string> &t, std::size_t i) {
  return i + 1 < t.size() && t[i + 1] == "(";
}

// `__attribute__ ( ( a, b(...) ) )` from t[at] to t[close]: true when each attribute of the list
// is one that decides layout (aligned, packed, either spelled with underscores).
bool layout_attribute_list(const std::vector<std::string> &t, std::size_t at, std::size_t close) {
  if (close < at + 4 || t[at + 2] != "(" || t[close - 1] != ")")
    return false;
  bool any = false;
  for (std::size_t i = at + 3; i < close - 1;) {
    std::string name = t[i];
    while (name.size() > 4 && name.compare(0, 2, "__") == 0 &&
           name.compare(name.size() - 2, 2, "__") == 0)
      name = name.substr(2, name.size() - 4);
    if (name != "aligned" && name != "packed")
      return false;
    any = true;
    ++i;
    if (i < close - 1 && t[i] == "(") {
      const std::size_t end = closing(t, i);
      if (end == npos || end >= close - 1)
        return false;
      i = end + 1;
    }
    if (i < close - 1 && t[i] != ",")
      return false;
    i += i < close - 1 ? 1 : 0;
  }
  return any;
}

std::size_t layout_attributes_end(const std::vector<std::string> &t, std::size_t p,
                                  const macro_table &macros, int depth);

// The expansion of the macro named at t[p] with its arguments, and the index past them; false
// when it cannot be expanded simply (no arguments given, # or ##, variadic).
bool expand(const std::vector<std::string> &t, std::size_t p, const macro &m,
            std::vector<std::string> &out, std::size_t &after) {
  if (!m.function) {
    out = m.body;
    after = p + 1;
    return true;
  }
  if (!followed_by_paren(t, p))
    return false;
  const std::size_t close = closing(t, p + 1);
  if (close == npos)
    return false;
  std::vector<std::vector<std::string>> args(1);
  int depth = 0;
  for (std::size_t i = p + 2; i < close; ++i) {
    const std::string &x = t[i];
    depth += (x == "(" || x == "[" || x == "{") ? 1 : (x == ")" || x == "]" || x == "}") ? -1 : 0;
    if (x == "," && depth == 0)
      args.emplace_back();
    else
      args.back().push_back(x);
  }
  if (args.size() != std::max<std::size_t>(m.params.size(), 1))
    return false;
  out.clear();
  for (const auto &x : m.body) {
    if (x == "#" || x == "##" || x == "__VA_ARGS__")
      return false;
    const auto param = std::find(m.params.begin(), m.params.end(), x);
    if (param == m.params.end())
      out.push_back(x);
    else
      for (const auto &a : args[static_cast<std::size_t>(param - m.params.begin())])
        out.push_back(a);
  }
  after = close + 1;
  return true;
}

// Past the run of layout attributes that starts at t[p] (p itself when none starts there):
// __align__(n), __attribute__((aligned...)) / ((packed)), and macros expanding to only those.
std::size_t layout_attributes_end(const std::vector<std::string> &t, std::size_t p,
                                  const macro_table &macros, int depth) {
  while (p < t.size()) {
    const std::string &x = t[p];
    if ((x == "__align__" || x == "__attribute__") && followed_by_paren(t, p)) {
      const std::size_t close = closing(t, p + 1);
      if (close == npos || (x == "__attribute__" && !layout_attribute_list(t, p, close)))
        return p;
      p = close + 1;
      continue;
    }
    const auto m = macros.find(x);
    std::vector<std::string> expansion;
    std::size_t after = 0;
    if (m == macros.end() || depth > 16 || !expand(t, p, m->second, expansion, after) ||
        expansion.empty() ||
        layout_attributes_end(expansion, 0, macros, depth + 1) != expansion.size())
      return p;
    p = after;
  }
  return p;
}

bool is_class_key(const std::string &t) {
  return t == "struct" || t == "union" || t == "class" || t == "enum";
}

// The index of the '{' opening the body of the class (or enum) whose head starts at t[p] (past
// its class key), or npos when the key starts no definition (`struct s *p;`, `struct s v = {..}`,
// `template <class T>`, `struct s f() {`).
std::size_t body_of(const std::vector<std::string> &t, std::size_t p, const macro_table &macros) {
  bool name_seen = false, after_name_part = false, base = false;
  while (p < t.size()) {
    const std::string &x = t[p];
    if (x == "{")
      return p;
    const bool attribute_word = x == "__attribute__" || x == "__align__" || x == "__declspec" ||
                                x == "alignas" || x == "_Alignas";
    const auto m = macros.find(x);
    if ((attribute_word || (m != macros.end() && m->second.function)) && followed_by_paren(t, p)) {
      const std::size_t close = closing(t, p + 1);
      if (close == npos)
        return npos;
      p = close + 1;
    } else if (x == "[" && p + 1 < t.size() && t[p + 1] == "[") {
      const std::size_t close = closing(t, p);
      if (close == npos)
        return npos;
      p = close + 1;
    } else if (is_ident(x)) {
      // Two names in a row: an elaborated type and a variable or function (`struct s v`), unless
      // the second is a base class (after ':'), `final`, or a known macro.
      if (!base && x != "final" && m == macros.end() && name_seen && !after_name_part)
        return npos;
      name_seen = name_seen || (x != "final" && m == macros.end());
      after_name_part = false;
      ++p;
    } else if (x == "::") {
      after_name_part = true;
      ++p;
    } else if (x == "<") { // template arguments of a specialisation's name
      int angle = 0;
      for (; p < t.size(); ++p) {
        if (t[p] == ";" || t[p] == "{" || t[p] == "}")
          return npos;
        angle += t[p] == "<" ? 1 : t[p] == ">" ? -1 : 0;
        if (angle == 0)
          break;
      }
      ++p;
    } else if (x == ":" || (base && x == ",")) { // a base clause, or an enum's underlying type
      base = true;
      ++p;
    } else {
      return npos;
    }
  }
  return npos;
}

struct edit {
  std::size_t key_end;                // where the attributes go
  std::size_t moved_begin, moved_end; // what is blanked
  std::string text;                   // the attributes, one line
};

} // namespace

const char *class_attributes_rules_version() { return "class-attributes 1"; }

std::string class_attributes_after_key(const std::string &source) {
  // Every attribute moved is, or is made by the source's own macros of, one of these words.
  if (source.find("__align__") == npos && source.find("__attribute__") == npos)
    return source;
  macro_table macros;
  const std::vector<token> tokens = lex(source, &macros);
  std::vector<std::string> t;
  t.reserve(tokens.size());
  for (const auto &x : tokens)
    t.push_back(x.text);

  std::vector<edit> edits;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!is_class_key(t[i]) || (i > 0 && t[i - 1] == "enum"))
      continue;
    std::size_t key = i;
    if (t[i] == "enum" && i + 1 < t.size() && (t[i + 1] == "class" || t[i + 1] == "struct"))
      key = i + 1;
    const std::size_t open = body_of(t, key + 1, macros);
    if (open == npos)
      continue;
    const std::size_t close = closing(t, open);
    if (close == npos)
      break;
    const std::size_t end = layout_attributes_end(t, close + 1, macros, 0);
    if (end == close + 1)
      continue;
    edit e{tokens[key].end, tokens[close + 1].begin, tokens[end - 1].end, ""};
    for (std::size_t k = close + 1; k < end; ++k)
      e.text += " " + t[k];
    edits.push_back(std::move(e));
  }
  if (edits.empty())
    return source;

  std::string out = source;
  // Blank first (lengths stay), then insert from the last position back.
  for (const auto &e : edits)
    for (std::size_t k = e.moved_begin; k < e.moved_end; ++k)
      if (out[k] != '\n')
        out[k] = ' ';
  std::sort(edits.begin(), edits.end(),
            [](const edit &a, const edit &b) { return a.key_end > b.key_end; });
  for (const auto &e : edits)
    out.insert(e.key_end, e.text);
  return out;
}

} // namespace cuplug::plugins
