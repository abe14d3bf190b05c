// NVRTC's stand-ins for the C and C++ standard headers (see std_headers.hpp). Device code needs
// little of them: NVRTC declares printf, malloc, memcpy and the math functions itself, libcu++
// (cuda/std/*) has the C++ library, and what neither has (FLT_*, M_PI, the <cstdint> names at
// global scope) is written here. C++ headers make libcu++'s names visible as std:: too, as they
// are under nvcc.
#include "std_headers.hpp"

#include <cstdint>
#include <cstdio>
#include <utility>

namespace cuplug::plugins {

namespace {

const char *const kStdAlias = "namespace std { using namespace ::cuda::std; }\n";

std::string libcu(const char *header) {
  return std::string("#pragma once\n#include <cuda/std/") + header + ">\n" + kStdAlias;
}

const char *const kGlobalInts = R"(#pragma once
#include <cuda/std/cstdint>
using ::cuda::std::int8_t;
using ::cuda::std::int16_t;
using ::cuda::std::int32_t;
using ::cuda::std::int64_t;
using ::cuda::std::uint8_t;
using ::cuda::std::uint16_t;
using ::cuda::std::uint32_t;
using ::cuda::std::uint64_t;
using ::cuda::std::intptr_t;
using ::cuda::std::uintptr_t;
using ::cuda::std::intmax_t;
using ::cuda::std::uintmax_t;
using ::cuda::std::int_least8_t;
using ::cuda::std::int_least16_t;
using ::cuda::std::int_least32_t;
using ::cuda::std::int_least64_t;
using ::cuda::std::uint_least8_t;
using ::cuda::std::uint_least16_t;
using ::cuda::std::uint_least32_t;
using ::cuda::std::uint_least64_t;
using ::cuda::std::int_fast8_t;
using ::cuda::std::int_fast16_t;
using ::cuda::std::int_fast32_t;
using ::cuda::std::int_fast64_t;
using ::cuda::std::uint_fast8_t;
using ::cuda::std::uint_fast16_t;
using ::cuda::std::uint_fast32_t;
using ::cuda::std::uint_fast64_t;
)";

// IEEE binary32 / binary64 limits, the values every C library gives.
const char *const kFloatLimits = R"(#pragma once
#ifndef FLT_RADIX
#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define DBL_MANT_DIG 53
#define FLT_DIG 6
#define DBL_DIG 15
#define FLT_DECIMAL_DIG 9
#define DBL_DECIMAL_DIG 17
#define DECIMAL_DIG 17
#define FLT_MIN_EXP (-125)
#define DBL_MIN_EXP (-1021)
#define FLT_MIN_10_EXP (-37)
#define DBL_MIN_10_EXP (-307)
#define FLT_MAX_EXP 128
#define DBL_MAX_EXP 1024
#define FLT_MAX_10_EXP 38
#define DBL_MAX_10_EXP 308
#define FLT_MAX 3.40282346638528859811704183484516925e+38F
#define DBL_MAX 1.79769313486231570814527423731704357e+308
#define FLT_MIN 1.17549435082228750796873653722224568e-38F
#define DBL_MIN 2.22507385850720138309023271733240406e-308
#define FLT_EPSILON 1.19209289550781250000000000000000000e-7F
#define DBL_EPSILON 2.22044604925031308084726333618164062e-16
#define FLT_TRUE_MIN 1.40129846432481707092372958328991613e-45F
#define DBL_TRUE_MIN 4.94065645841246544176568792868221372e-324
#define FLT_EVAL_METHOD 0
#endif
)";

// <math.h>'s macros (the functions are NVRTC builtins), with glibc's M_* constants.
const char *const kMathMacros = R"(#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef HUGE_VALF
#define HUGE_VALF __int_as_float(0x7f800000)
#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)
#endif
#ifndef M_PI
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#endif
)";

// Every header in extern "C++": PyCUDA wraps sources in extern "C" { ... } (no_extern_c=False),
// includes and all, and libcu++'s templates may not have C linkage. Host C libraries do the same.
std_header cxx_linkage(std_header h) {
  const std::string once = "#pragma once\n";
  std::string body = h.content.rfind(once, 0) == 0 ? h.content.substr(once.size()) : h.content;
  h.content = once + "extern \"C++\" {\n" + body + "}\n";
  return h;
}

std::vector<std_header> make() {
  std::vector<std_header> h;
  // C headers: what NVRTC lacks, at global scope.
  h.push_back({"stdio.h", "#pragma once\n"}); // printf is a builtin
  h.push_back({"stdint.h", kGlobalInts});
  h.push_back({"inttypes.h", kGlobalInts});
  h.push_back({"stddef.h", "#pragma once\n#include <cuda/std/cstddef>\n"});
  h.push_back({"stdbool.h", "#pragma once\n"});
  h.push_back({"stdlib.h", "#pragma once\n"}); // malloc, free, abs: builtins
  h.push_back({"string.h", "#pragma once\n"}); // memcpy, memset: builtins
  h.push_back({"assert.h", "#pragma once\n#include <cuda/std/cassert>\n"});
  h.push_back({"limits.h", "#pragma once\n#include <cuda/std/climits>\n"});
  h.push_back({"float.h", kFloatLimits});
  h.push_back({"math.h", std::string("#pragma once\n") + kMathMacros});
  // C++ headers: libcu++'s, also as std::.
  h.push_back({"cstdio", "#pragma once\n"});
  h.push_back({"cstdint", std::string(kGlobalInts) + "#include <cuda/std/cstdint>\n" + kStdAlias});
  h.push_back({"cinttypes", std::string(kGlobalInts) + kStdAlias});
  h.push_back({"cstddef", libcu("cstddef")});
  h.push_back({"cstdlib", libcu("cstdlib")});
  // libcu++'s <cuda/std/cstring> came in CCCL 13; before it (CCCL 12.9, the cu12 wheels) the
  // builtins memcpy and memset are what std:: gets.
  h.push_back(
      {"cstring", std::string("#pragma once\n#if __has_include(<cuda/std/cstring>)\n") +
                      "#include <cuda/std/cstring>\n" + kStdAlias +
                      "#else\nnamespace std { using ::memcpy; using ::memset; }\n#endif\n"});
  h.push_back({"cassert", "#pragma once\n#include <cuda/std/cassert>\n"});
  h.push_back({"climits", "#pragma once\n#include <cuda/std/climits>\n"});
  h.push_back({"cfloat", kFloatLimits});
  // libcu++'s <cmath> defines INFINITY and NAN its own way: math.h's, if first, make way.
  h.push_back({"cmath", "#undef INFINITY\n#undef NAN\n" + libcu("cmath") + kMathMacros});
  for (const char *name : {"algorithm", "array", "atomic", "bit", "complex", "functional",
                           "initializer_list", "iterator", "limits", "numeric", "optional", "ratio",
                           "span", "tuple", "type_traits", "utility", "variant"})
    h.push_back({name, libcu(std::string(name) == "algorithm" ? "__algorithm_" : name)});
  for (auto &header : h)
    header = cxx_linkage(std::move(header));
  return h;
}

} // namespace

const std::vector<std_header> &std_headers() {
  static const std::vector<std_header> headers = make();
  return headers;
}

const std_header &nvcc_names_header() {
  static const std_header header{"__cuplug_nvcc_names.h",
                                 "typedef unsigned int uint;\ntypedef unsigned short ushort;\n"
                                 "typedef unsigned long ulong;\n"};
  return header;
}

const std::string &std_headers_digest() {
  static const std::string digest = [] {
    std::uint64_t h = 1469598103934665603ull; // FNV-1a over names and contents
    std::vector<std_header> all = std_headers();
    all.push_back(nvcc_names_header());
    for (const auto &header : all)
      for (const std::string &part : {std::string(header.name), header.content})
        for (unsigned char c : part + '\0')
          h = (h ^ c) * 1099511628211ull;
    char text[17];
    std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(h));
    return std::string(text);
  }();
  return digest;
}

} // namespace cuplug::plugins
