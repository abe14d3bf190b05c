// The random number generator interface: counter-based streams written into device memory.
#pragma once

#include <cuplug/plugin_abi.hpp>

#include <cuplug/plugin.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace cuplug {

enum class rng_distribution { raw_bits, uniform, normal, lognormal, poisson };
enum class rng_dtype { float32, float64, uint32, uint64 };

struct rng_params {
  double mean = 0.0;   // normal / lognormal
  double stddev = 1.0; // normal / lognormal
  double lambda = 1.0; // poisson
};

// A generator holds a seed and an offset; each generate() continues where the last one ended.
// Optional distributions/dtypes throw not_supported; supports() says which exist.
class CUPLUG_API rng : public plugin_object {
public:
  void seed(std::uint64_t seed) { do_seed(seed); }
  void set_offset(std::uint64_t offset) { do_set_offset(offset); }
  std::uint64_t offset() const { return do_offset(); }
  bool supports(rng_distribution distribution, rng_dtype dtype) const {
    return do_supports(distribution, dtype);
  }
  // Fills `count` elements of `dtype` at device address `out` on `stream`.
  void generate(rng_distribution distribution, rng_dtype dtype, CUdeviceptr out, std::size_t count,
                const rng_params &params = {}, CUstream stream = nullptr);

private:
  virtual void do_seed(std::uint64_t seed) = 0;
  virtual void do_set_offset(std::uint64_t offset) = 0;
  virtual std::uint64_t do_offset() const = 0;
  virtual bool do_supports(rng_distribution, rng_dtype) const = 0;
  virtual void do_generate(rng_distribution distribution, rng_dtype dtype, CUdeviceptr out,
                           std::size_t count, const rng_params &params, CUstream stream) = 0;
};

} // namespace cuplug
