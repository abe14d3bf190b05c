// The generator's public door: checks the request before the plugin sees it, and translates
// whatever the plugin throws.
#include <cuplug/rng.hpp>

#include "foreign_exceptions.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace cuplug {

const char *to_string(rng_distribution distribution) noexcept {
  switch (distribution) {
  case rng_distribution::raw_bits:
    return "raw_bits";
  case rng_distribution::uniform:
    return "uniform";
  case rng_distribution::normal:
    return "normal";
  case rng_distribution::lognormal:
    return "lognormal";
  case rng_distribution::poisson:
    return "poisson";
  }
  return "unknown";
}

const char *to_string(rng_dtype dtype) noexcept {
  switch (dtype) {
  case rng_dtype::float32:
    return "float32";
  case rng_dtype::float64:
    return "float64";
  case rng_dtype::uint32:
    return "uint32";
  case rng_dtype::uint64:
    return "uint64";
  }
  return "unknown";
}

const char *to_string(rng_table table) noexcept {
  switch (table) {
  case rng_table::sobol32_directions:
    return "sobol32_directions";
  case rng_table::scrambled_sobol32_directions:
    return "scrambled_sobol32_directions";
  case rng_table::sobol64_directions:
    return "sobol64_directions";
  case rng_table::scrambled_sobol64_directions:
    return "scrambled_sobol64_directions";
  case rng_table::scramble32_constants:
    return "scramble32_constants";
  case rng_table::scramble64_constants:
    return "scramble64_constants";
  }
  return "unknown";
}

std::size_t size_of(rng_dtype dtype) noexcept {
  return dtype == rng_dtype::float64 || dtype == rng_dtype::uint64 ? 8 : 4;
}

std::size_t entry_size(rng_table table) noexcept {
  switch (table) {
  case rng_table::sobol64_directions:
  case rng_table::scrambled_sobol64_directions:
  case rng_table::scramble64_constants:
    return 8;
  default:
    return 4;
  }
}

void rng::seed(std::uint64_t seed) {
  try {
    do_seed(seed);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "rng", "seed");
  }
}

void rng::set_offset(std::uint64_t offset) {
  if (!seekable())
    throw not_supported("generator '" + backend_name() +
                        "' cannot move to an offset (it can only be seeded and run on)");
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

bool rng::seekable() const {
  try {
    return do_seekable();
  } catch (...) {
    detail::rethrow_as_core_error(*this, "rng", "seekable");
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
    throw not_supported("generator '" + backend_name() + "' does not provide " +
                        to_string(distribution) + " " + to_string(dtype) +
                        " values; supports() lists what it does");
  const bool box_muller =
      distribution == rng_distribution::normal || distribution == rng_distribution::lognormal;
  if (box_muller && !(params.stddev > 0 && std::isfinite(params.stddev)))
    throw std::invalid_argument("rng::generate: stddev must be positive");
  if (box_muller && !std::isfinite(params.mean))
    throw std::invalid_argument("rng::generate: mean must be finite");
  if (box_muller && count % 2 != 0)
    throw std::invalid_argument(
        std::string("rng::generate: ") + to_string(distribution) + " values come in pairs " +
        "(Box-Muller), so the count must be even; got " + std::to_string(count) + ": generate " +
        std::to_string(count + 1) + " and drop the last");
  if (distribution == rng_distribution::poisson &&
      !(params.lambda > 0 && std::isfinite(params.lambda)))
    throw std::invalid_argument("rng::generate: poisson lambda must be positive");
  const std::uint64_t start = offset();
  if (count > std::numeric_limits<std::uint64_t>::max() - start)
    throw std::invalid_argument("rng::generate: " + std::to_string(count) + " values from offset " +
                                std::to_string(start) +
                                " pass the end of the stream (2^64 positions); seed again or "
                                "move to a smaller offset");
  try {
    do_generate(distribution, dtype, out, count, params, stream);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "rng", "generate");
  }
}

std::size_t rng::table_size(rng_table table) const {
  try {
    return do_table_size(table);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "rng", "table_size");
  }
}

void rng::copy_table(rng_table table, std::size_t first, std::size_t count, void *out) const {
  if (count == 0)
    return;
  if (out == nullptr)
    throw std::invalid_argument("rng::copy_table: output pointer is null");
  const std::size_t size = table_size(table);
  if (size == 0)
    throw not_supported("generator '" + backend_name() + "' publishes no " + to_string(table) +
                        " table");
  if (first > size || count > size - first)
    throw std::invalid_argument("rng::copy_table: entries [" + std::to_string(first) + ", " +
                                std::to_string(first) + " + " + std::to_string(count) + ") of " +
                                to_string(table) + " are outside its " + std::to_string(size) +
                                " entries");
  try {
    do_copy_table(table, first, count, out);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "rng", "copy_table");
  }
}

std::uint32_t rng::library_version() const {
  try {
    return do_library_version();
  } catch (...) {
    detail::rethrow_as_core_error(*this, "rng", "library_version");
  }
}

void rng::do_copy_table(rng_table table, std::size_t, std::size_t, void *) const {
  throw not_supported("generator '" + backend_name() + "' publishes no " + to_string(table) +
                      " table");
}

} // namespace cuplug
