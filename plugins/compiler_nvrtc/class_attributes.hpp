// GCC's reading of attributes written after a class body, for NVRTC.
//
// GCC, and nvcc (whose front end emulates GCC), give a struct, union, class or enum the attributes
// written right after its closing brace: in `typedef struct _x_ { float f; } __align__(16) x;`
// (reikna's spelling) the struct is 16-aligned and sizeof(x) is 16. NVRTC's front end does not
// emulate GCC and gives them to the declarator instead: there x is a 16-aligned typedef of a 4-byte
// struct (sizeof 4, alignof 16, arrays and enclosing structs laid out differently), and with no
// declarator (`struct s { ... } __attribute__((packed));`) they are dropped with warning 1866.
// NVRTC has no option for GCC's reading (-Xcudafe --gnu_version breaks its own headers), so the
// NVRTC backend moves such attributes to where both compilers read them alike: right after the
// class key (`typedef struct __align__(16) _x_ { float f; } x;`).
#pragma once

#include <string>

namespace cuplug::plugins {

// `source` with the layout attributes written right after a class or enum body moved to right
// after its class key: __align__(n), __attribute__((aligned...)) / ((packed)), and macros of the
// source's own #defines that expand to nothing but those (reikna's ALIGN(n)). The moved text is
// blanked where it was, newlines kept, so line numbers do not change (columns on the class key's
// line do). Bodies written inside #define lines, and headers, are left as they are. Returns
// `source` unchanged when there is nothing to move.
std::string class_attributes_after_key(const std::string &source);

// Names these rules (part of the compiler's version, so the cache key changes when they do).
const char *class_attributes_rules_version();

} // namespace cuplug::plugins
