// The generator's public door: checks the request before the plugin sees it, and translates
// whatever the plugin throws.
#include <cuplug/rng.hpp>

#include "foreign_exceptions.hpp"

#include <stdexcept>

namespace cuplug {

void rng::seed(std::uint64_t seed) {
  try {
    do_seed(seed);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "rng", "seed");
  }
}

void rng::set_offset(std::uint64_t offset) {
  try {
    do_set_offset(offset);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "rng", "set_offset");
  }
}

std::uint64_t rng::offset() const {
  try {
    return do_offset();
  } catch (...) {
    detail::rethrow_as_core_error(*this, "rng", "offset");
  }
}

bool rng::supports(rng_distribution distribution, rng_dtype dtype) const {
  try {
    return do_supports(distribution, dtype);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "rng", "supports");
  }
}

void rng::generate(rng_distribution distribution, rng_dtype dtype, device_ptr out,
                   std::size_t count, const rng_params &params, CUstream stream) {
  if (count == 0)
    return;
  if (out == 0)
    throw std::invalid_argument("rng::generate: output pointer is null");
  if (!supports(distribution, dtype))
    throw not_supported("generator '" + backend_name() +
                        "' does not provide this distribution for this dtype");
  if ((distribution == rng_distribution::normal || distribution == rng_distribution::lognormal) &&
      !(params.stddev > 0))
    throw std::invalid_argument("rng::generate: stddev must be positive");
  if (distribution == rng_distribution::poisson && !(params.lambda > 0))
    throw std::invalid_argument("rng::generate: poisson lambda must be positive");
  try {
    do_generate(distribution, dtype, out, count, params, stream);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "rng", "generate");
  }
}

} // namespace cuplug
