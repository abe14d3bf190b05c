// The PTX reader's lexical layer (ptx_parser.cpp): tokens, PTX type sizes, numbers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fake::ptx {

struct token {
  std::string text;
  int line;
};

// Splits PTX into tokens: directives and identifiers (".entry", "%r1", "$str", "_Z3addPf"),
// numbers, strings and single punctuation characters; comments are dropped.
std::vector<token> tokenize(const std::string &s);

// Size of a PTX fundamental type; 0 when `t` is not one.
std::size_t type_size(const std::string &t);

inline std::size_t align_up(std::size_t n, std::size_t a) { return a ? (n + a - 1) / a * a : n; }

// An integer token (decimal, hex or octal; a U suffix allowed) into v; false if it is none.
bool parse_number(const std::string &t, unsigned long long &v);

} // namespace fake::ptx
