// The random number generator interface: counter-based streams written into device memory.
#pragma once

#include <cuplug/plugin.hpp>
#include <cuplug/plugin_abi.hpp>

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
// Optional distributions/dtypes throw not_supported; supports() says which exist. Every call
// goes through the core's door: bad arguments throw std::invalid_argument before the plugin
// runs, and whatever else a plugin throws that is not a cuplug::error arrives as plugin_error
// naming the backend and the call.
class CUPLUG_API rng : public plugin_object {
public:
  void seed(std::uint64_t seed);
  void set_offset(std::uint64_t offset);
  [[nodiscard]] std::uint64_t offset() const;
  [[nodiscard]] bool supports(rng_distribution distribution, rng_dtype dtype) const;
  // Fills `count` elements of `dtype` at device address `out` on `stream` (0 = legacy default).
  void generate(rng_distribution distribution, rng_dtype dtype, device_ptr out, std::size_t count,
                const rng_params &params = {}, CUstream stream = nullptr);

private:
  virtual void do_seed(std::uint64_t seed) = 0;
  virtual void do_set_offset(std::uint64_t offset) = 0;
  virtual std::uint64_t do_offset() const = 0;
  virtual bool do_supports(rng_distribution, rng_dtype) const = 0;
  virtual void do_generate(rng_distribution distribution, rng_dtype dtype, device_ptr out,
                           std::size_t count, const rng_params &params, CUstream stream) = 0;
};

} // namespace cuplug
