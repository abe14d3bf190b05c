// The philox plugin's device kernels, compiled to a fatbin at build time and embedded in the
// plugin: one thread per group of four positions, a grid-stride loop over the groups.
#include "philox.hpp"
#include "philox_launch.hpp"

namespace {

using namespace cuplug::philox;

template <class T> struct vec4;
template <> struct vec4<float> { using type = float4; };
template <> struct vec4<std::uint32_t> { using type = uint4; };

template <class T> __device__ __forceinline__ void store4(T *p, const T v[4]) {
  using V = typename vec4<T>::type;
  *reinterpret_cast<V *>(p) = V{v[0], v[1], v[2], v[3]};
}
template <> __device__ __forceinline__ void store4<double>(double *p, const double v[4]) {
  reinterpret_cast<double2 *>(p)[0] = double2{v[0], v[1]};
  reinterpret_cast<double2 *>(p)[1] = double2{v[2], v[3]};
}

// Calls make(q, e[z], values) for every group the call touches and writes the values whose
// positions fall inside [first, first + count).
template <class T, class Make>
__device__ __forceinline__ void each_group(const kernel_args &a, Make make) {
  const std::uint64_t q_first = a.first / 4;
  const std::uint64_t groups = (a.first + a.count - 1) / 4 - q_first + 1;
  T *out = static_cast<T *>(a.out);
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t g = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; g < groups;
       g += stride) {
    const std::uint64_t q = q_first + g;
    const std::uint64_t extra = a.extra != nullptr ? a.extra[q % streams] : 0;
    T v[4];
    make(q, extra, v);
    // Index of the group's first position in out (-3 .. -1 for a partial first group).
    const long long i0 = static_cast<long long>(4 * q - a.first);
    const long long n = static_cast<long long>(a.count);
    if (a.vector && i0 >= 0 && i0 + 4 <= n) {
      store4(out + i0, v);
    } else {
#pragma unroll
      for (int l = 0; l < 4; ++l)
        if (i0 + l >= 0 && i0 + l < n)
          out[i0 + l] = v[l];
    }
  }
}

} // namespace

extern "C" {

__global__ void __launch_bounds__(threads_per_block) cuplug_philox_raw_u32(kernel_args a) {
  each_group<std::uint32_t>(
      a, [&](std::uint64_t q, std::uint64_t e, std::uint32_t v[4]) { group_raw(a.seed, q, e, v); });
}

__global__ void __launch_bounds__(threads_per_block) cuplug_philox_uniform_f32(kernel_args a) {
  each_group<float>(
      a, [&](std::uint64_t q, std::uint64_t e, float v[4]) { group_uniform(a.seed, q, e, v); });
}

__global__ void __launch_bounds__(threads_per_block) cuplug_philox_normal_f32(kernel_args a) {
  const float mean = static_cast<float>(a.mean), stddev = static_cast<float>(a.stddev);
  each_group<float>(a, [&](std::uint64_t q, std::uint64_t e, float v[4]) {
    group_normal(a.seed, q, e, mean, stddev, v);
  });
}

__global__ void __launch_bounds__(threads_per_block) cuplug_philox_lognormal_f32(kernel_args a) {
  const float mean = static_cast<float>(a.mean), stddev = static_cast<float>(a.stddev);
  each_group<float>(a, [&](std::uint64_t q, std::uint64_t e, float v[4]) {
    group_lognormal(a.seed, q, e, mean, stddev, v);
  });
}

__global__ void __launch_bounds__(threads_per_block) cuplug_philox_uniform_f64(kernel_args a) {
  const std::uint64_t q0 = a.first / 4;
  each_group<double>(a, [&](std::uint64_t q, std::uint64_t e, double v[4]) {
    group_uniform(a.seed, q, q0, e, v);
  });
}

__global__ void __launch_bounds__(threads_per_block) cuplug_philox_normal_f64(kernel_args a) {
  const std::uint64_t q0 = a.first / 4;
  each_group<double>(a, [&](std::uint64_t q, std::uint64_t e, double v[4]) {
    group_normal(a.seed, q, q0, e, a.mean, a.stddev, v);
  });
}

__global__ void __launch_bounds__(threads_per_block) cuplug_philox_lognormal_f64(kernel_args a) {
  const std::uint64_t q0 = a.first / 4;
  each_group<double>(a, [&](std::uint64_t q, std::uint64_t e, double v[4]) {
    group_lognormal(a.seed, q, q0, e, a.mean, a.stddev, v);
  });
}

__global__ void __launch_bounds__(threads_per_block) cuplug_philox_poisson_u32(kernel_args a) {
  each_group<std::uint32_t>(a, [&](std::uint64_t q, std::uint64_t e, std::uint32_t v[4]) {
    group_poisson(a.seed, q, e, a.thresholds, a.threshold_count, a.base, v);
  });
}

// After a float64 call (its own launch, on the same stream): e[z] += the groups of stream z
// that call finished. One thread per stream.
__global__ void __launch_bounds__(threads_per_block) cuplug_philox_add_extra(kernel_args a) {
  const unsigned z = blockIdx.x * blockDim.x + threadIdx.x;
  if (z < streams)
    a.extra[z] += extra_added(z, a.first, a.count);
}

} // extern "C"
