// The C and C++ standard headers NVRTC does not have, as small in-memory headers over libcu++ and
// NVRTC's builtins, so that sources written for nvcc (#include <stdio.h>, <cmath>, <cstdint>...)
// compile unchanged.
#pragma once

#include <string>
#include <vector>

namespace cuplug::plugins {

struct std_header {
  const char *name;    // as written in #include <...>
  std::string content; // what NVRTC reads for it
};

// Every header cuplug supplies, in a fixed order.
const std::vector<std_header> &std_headers();

// Read before every source (-include): the names nvcc's host headers (glibc's <sys/types.h>)
// give every CUDA source and sources rely on without including anything: uint, ushort, ulong.
const std_header &nvcc_names_header();

// A short digest of all of them (nvcc_names_header too): part of the compiler's version, so that
// the compile cache tells kernels built with other headers apart.
const std::string &std_headers_digest();

} // namespace cuplug::plugins
