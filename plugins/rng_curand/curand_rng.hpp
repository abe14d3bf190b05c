// The "curand" rng plugin: cuRAND's host API generators behind the rng interface.
#pragma once

#include "curand_generators.hpp"

#include <cuplug/rng.hpp>

#include <curand.h>

#include <cstdint>

namespace cuplug::plugins {

// Options: generator (philox, the default, xorwow, mrg32k3a, mtgp32, mt19937, sobol32,
// scrambled_sobol32, sobol64, scrambled_sobol64), seed (default 0; the Sobol generators have
// none), ordering (default, best, seeded, legacy, dynamic), dimensions (Sobol, 1 to 20000),
// memory ("device", the default, or "host": cuRAND's host generator filling host memory),
// split_tails ("auto", the default, "always", "never": curand_generators.hpp, tail_split).
//
// The cuRAND generator is made in the first context that generates and made again (seed and
// offset carried over) when another context asks; every call sets its stream. offset() is
// cuRAND's: one position per value, except that XORWOW and MRG32k3a advance one position per
// normal / lognormal pair and a Sobol generator one per point (`dimensions` values, which each
// call stores dimension by dimension). The Mersenne twisters cannot skip: not seekable, and seeding
// them makes them anew.
class curand_rng final : public rng {
public:
  explicit curand_rng(const options &opts);
  ~curand_rng() override;
  // Releases the generators made in `ctx`, which the host is about to destroy (a context
  // destroy callback: cuplug/context_events.hpp).
  static void drop_context(CUcontext ctx) noexcept;

private:
  void do_seed(std::uint64_t seed) override;
  void do_set_offset(std::uint64_t offset) override;
  std::uint64_t do_offset() const override { return offset_; }
  bool do_seekable() const override { return type_.seekable; }
  bool do_supports(rng_distribution distribution, rng_dtype dtype) const override {
    return curand::supports(type_, distribution, dtype);
  }
  void do_generate(rng_distribution distribution, rng_dtype dtype, device_ptr out,
                   std::size_t count, const rng_params &params, CUstream stream) override;
  std::size_t do_table_size(rng_table table) const override;
  void do_copy_table(rng_table table, std::size_t first, std::size_t count,
                     void *out) const override;
  std::uint32_t do_library_version() const override;

  // The cuRAND generator for the current context (device) or the host generator, made with the
  // settings below when missing.
  curandGenerator_t generator();
  // One curandGenerate* call for `count` values at cuRAND's current position.
  void generate_into(curandGenerator_t g, rng_distribution distribution, rng_dtype dtype,
                     device_ptr out, std::size_t count, const rng_params &params);
  // `count` values from a call of a multiple of 4 values into scratch memory (tail_split):
  // one call's values (a longer call begins with the same values), none left unwritten.
  void generate_rounded(curandGenerator_t g, rng_distribution distribution, rng_dtype dtype,
                        device_ptr out, std::size_t count, const rng_params &params,
                        CUstream stream);
  void make(unsigned long long context);
  void release() noexcept;

  const curand::generator_type &type_;
  curandOrdering_t ordering_;
  curand::tail_split split_tails_;
  unsigned dimensions_ = 1;
  bool host_ = false;
  std::uint64_t seed_ = 0;
  std::uint64_t offset_ = 0;
  curandGenerator_t gen_ = nullptr;
  unsigned long long context_ = 0; // the context gen_ was made in (its unique id)
};

} // namespace cuplug::plugins
