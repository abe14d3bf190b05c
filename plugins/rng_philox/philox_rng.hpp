// The "philox" rng plugin: Philox4x32-10 in cuRAND's PHILOX4_32_10 order, with its own kernels.
#pragma once

#include "poisson_table.hpp"

#include <cuplug/rng.hpp>

#include <cstdint>
#include <vector>

namespace cuplug::plugins {

// Raw uint32 and float32/float64 uniform, normal and lognormal values are bit-identical to
// cuRAND's PHILOX4_32_10 generator for the same seed and offset (device: its device generator;
// memory=host: its host generator). Poisson values (uint32) come from the same words by
// inversion: the same distribution, not cuRAND's values. Options: seed (default 0), memory
// ("device", the default, or "host": fill host memory on the calling thread, cuRAND's host
// generator's reference path).
class philox_rng final : public rng {
public:
  explicit philox_rng(const options &opts);
  ~philox_rng() override;

private:
  void do_seed(std::uint64_t seed) override;
  void do_set_offset(std::uint64_t offset) override;
  std::uint64_t do_offset() const override { return offset_; }
  bool do_supports(rng_distribution distribution, rng_dtype dtype) const override;
  void do_generate(rng_distribution distribution, rng_dtype dtype, device_ptr out,
                   std::size_t count, const rng_params &params, CUstream stream) override;

  const philox::poisson_table &table_for(double lambda);
  void generate_host(rng_distribution distribution, rng_dtype dtype, void *out, std::size_t count,
                     const rng_params &params);
  void generate_device(rng_distribution distribution, rng_dtype dtype, device_ptr out,
                       std::size_t count, const rng_params &params, CUstream stream);
  // The device copy of e[z] in the current context (moved there from another one if needed).
  device_ptr device_extra(unsigned long long context);

  std::uint64_t seed_ = 0;
  std::uint64_t offset_ = 0;
  bool host_ = false;
  philox::poisson_table table_; // the last lambda's
  // e[z] of cuRAND's 65536 streams (philox.hpp): all 0 while extra_zero_, else held in
  // host_extra_ (memory=host) or at device_extra_ in the context device_extra_context_.
  bool extra_zero_ = true;
  std::vector<std::uint64_t> host_extra_;
  device_ptr device_extra_ = 0;
  unsigned long long device_extra_context_ = 0;
};

} // namespace cuplug::plugins
