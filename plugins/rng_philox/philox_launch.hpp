// The one argument every philox kernel takes, laid out identically by the host compiler and nvcc,
// and the kernels' names in the embedded image.
#pragma once

#include <cstdint>

namespace cuplug::philox {

struct kernel_args {
  std::uint64_t seed;
  std::uint64_t first; // position of out[0]
  std::uint64_t count; // outputs to write, > 0
  void *out;
  double mean, stddev;             // normal / lognormal (float kernels round them to float)
  const std::uint32_t *thresholds; // poisson
  std::uint64_t *extra;            // e[z] of the 65536 streams (philox.hpp); null when all 0
  std::uint32_t threshold_count;
  std::uint32_t base;
  std::uint32_t vector; // nonzero: out + (the first whole group) is aligned for 4-wide stores
  std::uint32_t padding;
};
static_assert(sizeof(kernel_args) == 80, "kernel_args crosses the host/device boundary");

// extern "C" names in philox_kernels.cu, indexed by philox_rng's kernel enum.
inline constexpr const char *kernel_names[] = {
    "cuplug_philox_raw_u32",       "cuplug_philox_uniform_f32", "cuplug_philox_normal_f32",
    "cuplug_philox_lognormal_f32", "cuplug_philox_uniform_f64", "cuplug_philox_normal_f64",
    "cuplug_philox_lognormal_f64", "cuplug_philox_poisson_u32", "cuplug_philox_add_extra",
};
inline constexpr int kernel_count = sizeof(kernel_names) / sizeof(kernel_names[0]);
inline constexpr unsigned threads_per_block = 256;

} // namespace cuplug::philox
