// The lexical layer of the fake driver's PTX reader (ptx_tokens.hpp).
#include "ptx_tokens.hpp"

#include <cctype>
#include <cstdlib>
#include <utility>

namespace fake::ptx {

std::vector<token> tokenize(const std::string &s) {
  std::vector<token> out;
  int line = 1;
  size_t i = 0, n = s.size();
  auto ident_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' ||
           c == '%';
  };
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n')
        ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
        line += s[i++] == '\n';
      i += 2;
    } else if (c == '"') {
      size_t j = i + 1;
      while (j < n && s[j] != '"' && s[j] != '\n')
        j += s[j] == '\\' ? 2 : 1;
      out.push_back({s.substr(i, j + 1 - i), line});
      i = j + 1;
    } else if (ident_char(c) || c == '-' || c == '+') {
      size_t j = i + 1;
      while (j < n && ident_char(s[j]))
        ++j;
      out.push_back({s.substr(i, j - i), line});
      i = j;
    } else {
      out.push_back({std::string(1, c), line});
      ++i;
    }
  }
  return out;
}

std::size_t type_size(const std::string &t) {
  static const std::pair<const char *, std::size_t> sizes[] = {
      {".b8", 1},    {".u8", 1},     {".s8", 1},     {".b16", 2},    {".u16", 2}, {".s16", 2},
      {".f16", 2},   {".bf16", 2},   {".b32", 4},    {".u32", 4},    {".s32", 4}, {".f32", 4},
      {".f16x2", 4}, {".bf16x2", 4}, {".tf32", 4},   {".b64", 8},    {".u64", 8}, {".s64", 8},
      {".f64", 8},   {".b128", 16},  {".e4m3x2", 2}, {".e5m2x2", 2}, {".pred", 1}};
  for (const auto &[name, size] : sizes)
    if (t == name)
      return size;
  return 0;
}

bool parse_number(const std::string &t, unsigned long long &v) {
  if (t.empty() || !std::isdigit(static_cast<unsigned char>(t[0])))
    return false;
  char *end = nullptr;
  v = std::strtoull(t.c_str(), &end, 0);
  if (*end == 'U' || *end == 'u')
    ++end;
  return *end == '\0';
}

} // namespace fake::ptx
