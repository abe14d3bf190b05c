// Sources, requests and output checks shared by the nvcc and nvrtc compiler plugin tests.
#pragma once

#include "test_support.hpp"

#include <cuplug/compiler.hpp>

#include <ostream>
#include <string>

namespace cuplug { // so Boost.Test can print it
inline std::ostream &operator<<(std::ostream &os, image_format f) { return os << to_string(f); }
} // namespace cuplug

namespace compiler_test_support {

inline constexpr const char *double_array =
    R"(extern "C" __global__ void double_array(float *a, int n) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < n) a[idx] = a[idx] * 2.0f;
}
)";

// Templates whose instantiations the tests ask for by name expression.
inline constexpr const char *templates =
    R"(template <typename T> __global__ void scale(T *a, T s) { a[threadIdx.x] *= s; }
namespace ns { template <int N> __global__ void fill(float *a) { a[N] = 1; } }
)";

inline cuplug::compile_request request(const std::string &source, cuplug::image_format target,
                                       const char *arch = "sm_90") {
  cuplug::compile_request r;
  r.source = source;
  r.target = target;
  r.arch = arch;
  return r;
}

// PTX stores 6.0f as a float literal or, once optimised, as its bits in an integer move.
inline bool stores_six(const std::string &ptx) {
  return test_support::contains(ptx, "0f40C00000") || test_support::contains(ptx, "1086324736");
}

inline bool is_elf(const std::string &data) {
  return data.size() > 4 && data.compare(0, 4,
                                         "\x7f"
                                         "ELF") == 0;
}

} // namespace compiler_test_support
