// Philox4x32-10 and the order in which cuRAND's PHILOX4_32_10 generator hands out its words,
// for the host (the reference path, tests) and the device (the kernels).
//
// Everything here follows one layout, measured against cuRAND's host generator
// (tests/cpp/rng/test_philox_vs_curand.cpp checks it in CI, and on a GPU against its device one):
//   key      = (seed low 32 bits, seed high 32 bits)
//   position p of an output = the generator's offset + its index in the call; one output per
//            position whatever its type (a float64 advances the offset by one, like a uint32).
//   cuRAND runs the generator as 65536 interleaved streams: group q = p / 4 (four positions)
//            belongs to stream z = q % 65536, pass i = q / 65536, and is made from the block of
//            counter (x as 64 bits, z, 0) with x = i + e[z]. e[z] counts the extra blocks
//            stream z has used: 0 after seeding or moving the offset.
//   32-bit outputs (raw uint32, float32 uniform / normal / lognormal) use word p % 4 of that
//            block (normal / lognormal: Box-Muller of the pair of words p % 4 & ~1, +1, the sine
//            for even p, the cosine for odd p).
//   64-bit outputs (float64 uniform / normal / lognormal) take two blocks per group, x and x + 1
//            with x = 2 i - f + e[z], where f is the pass of stream z's first group in the call
//            (q0 / 65536, plus one when z < q0 % 65536, for the call's first group q0); output
//            p % 4 uses words (0, 1) of block x + (p % 4) / 2 when p is even, (2, 3) when odd.
//            A call adds to e[z] one for each of stream z's groups whose last position it wrote.
//   So a float64 call makes later calls depend on how the stream was split into calls, as in
//   cuRAND; seed() and set_offset() clear e.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CUPLUG_PHILOX_FN __host__ __device__ __forceinline__
#else
#include <cmath>
#define CUPLUG_PHILOX_FN inline
#endif

namespace cuplug::philox {

struct u32x4 {
  std::uint32_t x, y, z, w;
};

// cuRAND runs its generator as this many interleaved streams (the z word of the counter).
constexpr std::uint32_t streams = 65536;

constexpr std::uint32_t mul0 = 0xD2511F53u, mul1 = 0xCD9E8D57u;
constexpr std::uint32_t weyl0 = 0x9E3779B9u, weyl1 = 0xBB67AE85u;

CUPLUG_PHILOX_FN std::uint32_t mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t &hi) {
#if defined(__CUDA_ARCH__)
  hi = __umulhi(a, b);
  return a * b;
#else
  const std::uint64_t product = std::uint64_t{a} * b;
  hi = static_cast<std::uint32_t>(product >> 32);
  return static_cast<std::uint32_t>(product);
#endif
}

// Philox4x32 with 10 rounds (Salmon et al., SC'11), as Random123 and cuRAND define it.
CUPLUG_PHILOX_FN u32x4 philox4x32_10(u32x4 c, std::uint32_t k0, std::uint32_t k1) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, hi1;
    const std::uint32_t lo0 = mulhilo(mul0, c.x, hi0);
    const std::uint32_t lo1 = mulhilo(mul1, c.z, hi1);
    c = u32x4{hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
    k0 += weyl0;
    k1 += weyl1;
  }
  return c;
}

// The block of counter (iteration as 64 bits, stream, 0) under `seed`.
CUPLUG_PHILOX_FN u32x4 block(std::uint64_t seed, std::uint64_t iteration, std::uint32_t stream) {
  return philox4x32_10(u32x4{static_cast<std::uint32_t>(iteration),
                             static_cast<std::uint32_t>(iteration >> 32), stream, 0u},
                       static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// The block that 32-bit outputs of group q (positions 4q .. 4q + 3) come from; `extra` is e[z].
CUPLUG_PHILOX_FN u32x4 block32(std::uint64_t seed, std::uint64_t q, std::uint64_t extra = 0) {
  return block(seed, q / streams + extra, static_cast<std::uint32_t>(q % streams));
}

// The first of the two block counters that 64-bit outputs of group q come from, in a call whose
// first group is q0; `extra` is e[z] when the call started.
CUPLUG_PHILOX_FN std::uint64_t block64_iteration(std::uint64_t q, std::uint64_t q0,
                                                 std::uint64_t extra = 0) {
  const std::uint64_t first = q0 / streams + ((q % streams) < (q0 % streams) ? 1u : 0u);
  return 2 * (q / streams) - first + extra;
}

// How much a 64-bit call of `count` outputs from position `first` adds to e[stream]: the
// number of the stream's groups whose last position the call writes.
CUPLUG_PHILOX_FN std::uint64_t extra_added(std::uint32_t stream, std::uint64_t first,
                                           std::uint64_t count) {
  const std::uint64_t last = first + count - 1;
  const std::uint64_t q0 = first / 4, q1 = last / 4;
  if (last % 4 != 3 && q1 == q0)
    return 0; // the only group is left unfinished
  const std::uint64_t groups = q1 - q0 + (last % 4 == 3 ? 1 : 0);
  const std::uint64_t distance = (stream + streams - q0 % streams) % streams;
  return groups / streams + (distance < groups % streams ? 1u : 0u);
}

CUPLUG_PHILOX_FN std::uint32_t lane(const u32x4 &b, unsigned i) {
  return i == 0 ? b.x : i == 1 ? b.y : i == 2 ? b.z : b.w;
}

// ---- conversions, with cuRAND's constants (curand_uniform.h, curand_normal.h) -------------

constexpr float two_pow_m32 = 2.3283064e-10f;                  // CURAND_2POW32_INV
constexpr double two_pow_m53 = 1.1102230246251565e-16;         // CURAND_2POW53_INV_DOUBLE
constexpr float two_pow_m32_2pi = 2.3283064e-10f * 6.2831855f; // CURAND_2POW32_INV_2PI
constexpr double pi = 3.1415926535897932;                      // CURAND_PI_DOUBLE

// (0, 1]: u · 2^-32 + 2^-33.
CUPLUG_PHILOX_FN float uniform_float(std::uint32_t u) {
  return u * two_pow_m32 + two_pow_m32 / 2.0f;
}

// 53 bits from two words: (lo ^ hi << 21) · 2^-53 + 2^-54.
CUPLUG_PHILOX_FN std::uint64_t bits53(std::uint32_t lo, std::uint32_t hi) {
  return std::uint64_t{lo} ^ (std::uint64_t{hi} << (53 - 32));
}
CUPLUG_PHILOX_FN double uniform_double(std::uint32_t lo, std::uint32_t hi) {
  return bits53(lo, hi) * two_pow_m53 + two_pow_m53 / 2.0;
}

struct float_pair {
  float sin_part, cos_part;
};
struct double_pair {
  double sin_part, cos_part;
};

// Box-Muller of two words as cuRAND computes it: on the device with __sincosf, on the host with
// sinf / cosf (so device and host results may differ in the last bits; docs/rng.md).
CUPLUG_PHILOX_FN float_pair box_muller(std::uint32_t x, std::uint32_t y) {
  const float u = x * two_pow_m32 + two_pow_m32 / 2;
  const float v = y * two_pow_m32_2pi + two_pow_m32_2pi / 2;
  float_pair r;
#if defined(__CUDA_ARCH__)
  const float s = sqrtf(-2.0f * logf(u));
  __sincosf(v, &r.sin_part, &r.cos_part);
#else
  const float s = std::sqrt(-2.0f * std::log(u));
  r.sin_part = std::sin(v);
  r.cos_part = std::cos(v);
#endif
  r.sin_part *= s;
  r.cos_part *= s;
  return r;
}

// Box-Muller of four words (two 53-bit uniforms); sincospi on the device, sin / cos of v·π on
// the host, as cuRAND.
CUPLUG_PHILOX_FN double_pair box_muller_double(std::uint32_t x0, std::uint32_t x1, std::uint32_t y0,
                                               std::uint32_t y1) {
  const double u = bits53(x0, x1) * two_pow_m53 + two_pow_m53 / 2.0;
  const double v = bits53(y0, y1) * (two_pow_m53 * 2.0) + two_pow_m53;
  double_pair r;
#if defined(__CUDA_ARCH__)
  const double s = sqrt(-2.0 * log(u));
  sincospi(v, &r.sin_part, &r.cos_part);
#else
  const double s = std::sqrt(-2.0 * std::log(u));
  r.sin_part = std::sin(v * pi);
  r.cos_part = std::cos(v * pi);
#endif
  r.sin_part *= s;
  r.cos_part *= s;
  return r;
}

// ---- four outputs per group q (positions 4q .. 4q + 3), in position order ------------------

CUPLUG_PHILOX_FN void group_raw(std::uint64_t seed, std::uint64_t q, std::uint64_t extra,
                                std::uint32_t v[4]) {
  const u32x4 b = block32(seed, q, extra);
  v[0] = b.x;
  v[1] = b.y;
  v[2] = b.z;
  v[3] = b.w;
}

CUPLUG_PHILOX_FN void group_uniform(std::uint64_t seed, std::uint64_t q, std::uint64_t extra,
                                    float v[4]) {
  const u32x4 b = block32(seed, q, extra);
  v[0] = uniform_float(b.x);
  v[1] = uniform_float(b.y);
  v[2] = uniform_float(b.z);
  v[3] = uniform_float(b.w);
}

// mean + stddev · z with z standard normal. cuRAND's host generator rounds the product and the
// sum separately (so must the host build: -ffp-contract=off); on the device nvcc contracts it
// to one fused multiply-add, as it does in cuRAND's own kernels.
CUPLUG_PHILOX_FN void group_normal(std::uint64_t seed, std::uint64_t q, std::uint64_t extra,
                                   float mean, float stddev, float v[4]) {
  const u32x4 b = block32(seed, q, extra);
  const float_pair p0 = box_muller(b.x, b.y), p1 = box_muller(b.z, b.w);
  v[0] = p0.sin_part * stddev + mean;
  v[1] = p0.cos_part * stddev + mean;
  v[2] = p1.sin_part * stddev + mean;
  v[3] = p1.cos_part * stddev + mean;
}

CUPLUG_PHILOX_FN void group_lognormal(std::uint64_t seed, std::uint64_t q, std::uint64_t extra,
                                      float mean, float stddev, float v[4]) {
  const u32x4 b = block32(seed, q, extra);
  const float_pair p0 = box_muller(b.x, b.y), p1 = box_muller(b.z, b.w);
#if defined(__CUDA_ARCH__)
  v[0] = expf(mean + stddev * p0.sin_part);
  v[1] = expf(mean + stddev * p0.cos_part);
  v[2] = expf(mean + stddev * p1.sin_part);
  v[3] = expf(mean + stddev * p1.cos_part);
#else
  v[0] = std::exp(mean + stddev * p0.sin_part);
  v[1] = std::exp(mean + stddev * p0.cos_part);
  v[2] = std::exp(mean + stddev * p1.sin_part);
  v[3] = std::exp(mean + stddev * p1.cos_part);
#endif
}

// The two blocks 64-bit outputs of group q come from, in a call whose first group is q0.
struct block_pair {
  u32x4 lo, hi;
};
CUPLUG_PHILOX_FN block_pair blocks64(std::uint64_t seed, std::uint64_t q, std::uint64_t q0,
                                     std::uint64_t extra) {
  const std::uint64_t x = block64_iteration(q, q0, extra);
  const std::uint32_t z = static_cast<std::uint32_t>(q % streams);
  return block_pair{block(seed, x, z), block(seed, x + 1, z)};
}

CUPLUG_PHILOX_FN void group_uniform(std::uint64_t seed, std::uint64_t q, std::uint64_t q0,
                                    std::uint64_t extra, double v[4]) {
  const block_pair b = blocks64(seed, q, q0, extra);
  v[0] = uniform_double(b.lo.x, b.lo.y);
  v[1] = uniform_double(b.lo.z, b.lo.w);
  v[2] = uniform_double(b.hi.x, b.hi.y);
  v[3] = uniform_double(b.hi.z, b.hi.w);
}

CUPLUG_PHILOX_FN void group_normal(std::uint64_t seed, std::uint64_t q, std::uint64_t q0,
                                   std::uint64_t extra, double mean, double stddev, double v[4]) {
  const block_pair b = blocks64(seed, q, q0, extra);
  const double_pair p0 = box_muller_double(b.lo.x, b.lo.y, b.lo.z, b.lo.w);
  const double_pair p1 = box_muller_double(b.hi.x, b.hi.y, b.hi.z, b.hi.w);
  v[0] = p0.sin_part * stddev + mean;
  v[1] = p0.cos_part * stddev + mean;
  v[2] = p1.sin_part * stddev + mean;
  v[3] = p1.cos_part * stddev + mean;
}

CUPLUG_PHILOX_FN void group_lognormal(std::uint64_t seed, std::uint64_t q, std::uint64_t q0,
                                      std::uint64_t extra, double mean, double stddev,
                                      double v[4]) {
  const block_pair b = blocks64(seed, q, q0, extra);
  const double_pair p0 = box_muller_double(b.lo.x, b.lo.y, b.lo.z, b.lo.w);
  const double_pair p1 = box_muller_double(b.hi.x, b.hi.y, b.hi.z, b.hi.w);
#if defined(__CUDA_ARCH__)
  v[0] = exp(mean + stddev * p0.sin_part);
  v[1] = exp(mean + stddev * p0.cos_part);
  v[2] = exp(mean + stddev * p1.sin_part);
  v[3] = exp(mean + stddev * p1.cos_part);
#else
  v[0] = std::exp(mean + stddev * p0.sin_part);
  v[1] = std::exp(mean + stddev * p0.cos_part);
  v[2] = std::exp(mean + stddev * p1.sin_part);
  v[3] = std::exp(mean + stddev * p1.cos_part);
#endif
}

// Poisson by inversion of one word per output: the value is `base` plus the number of
// thresholds at or below the word (thresholds ascending, `count` of them; see poisson_table).
// Integer-only, so host and device agree bit for bit.
CUPLUG_PHILOX_FN std::uint32_t poisson_lookup(std::uint32_t word, const std::uint32_t *thresholds,
                                              std::uint32_t count, std::uint32_t base) {
  std::uint32_t lo = 0, hi = count; // first threshold > word, by bisection
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (thresholds[mid] <= word)
      lo = mid + 1;
    else
      hi = mid;
  }
  return base + lo;
}

CUPLUG_PHILOX_FN void group_poisson(std::uint64_t seed, std::uint64_t q, std::uint64_t extra,
                                    const std::uint32_t *thresholds, std::uint32_t count,
                                    std::uint32_t base, std::uint32_t v[4]) {
  const u32x4 b = block32(seed, q, extra);
  v[0] = poisson_lookup(b.x, thresholds, count, base);
  v[1] = poisson_lookup(b.y, thresholds, count, base);
  v[2] = poisson_lookup(b.z, thresholds, count, base);
  v[3] = poisson_lookup(b.w, thresholds, count, base);
}

} // namespace cuplug::philox
