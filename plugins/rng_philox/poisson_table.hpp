// Inversion tables for the philox plugin's Poisson values: thresholds on one 32-bit word.
#pragma once

#include <cstdint>
#include <vector>

namespace cuplug::philox {

// For word w, the value is base + (number of thresholds <= w) (philox.hpp's poisson_lookup):
// thresholds[k] = round(2^32 · P(X <= base + k)), ascending, holding only the values a word can
// reach (P(X = k) below 2^-32 at either end may never appear). lambda in (0, max_poisson_lambda].
struct poisson_table {
  double lambda = 0;
  std::uint32_t base = 0;
  std::vector<std::uint32_t> thresholds;
};

inline constexpr double max_poisson_lambda = 1e9;

poisson_table make_poisson_table(double lambda);

} // namespace cuplug::philox
