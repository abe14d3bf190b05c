// Builds the Poisson inversion table: probabilities from the mode outwards by their ratios
// (p(k+1) = p(k)·λ/(k+1)), in long double, normalised over the kept range.
#include "poisson_table.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace cuplug::philox {

poisson_table make_poisson_table(double lambda) {
  if (!(lambda > 0) || !(lambda <= max_poisson_lambda))
    throw std::invalid_argument("philox: poisson lambda must be in (0, 1e9], got " +
                                std::to_string(lambda));
  const long double lam = lambda;
  const long double mode = std::floor(lam);
  // Probabilities below this (relative to the mode's, which is >= 1/(2.6·sqrt(λ)+1)) cannot
  // change a 32-bit threshold.
  const long double negligible = 1e-22L;
  const long double p_mode = std::exp(mode * std::log(lam) - lam - std::lgamma(mode + 1));
  std::vector<long double> below; // p(mode-1), p(mode-2), ...
  for (long double k = mode, p = p_mode; k > 0;) {
    p *= k / lam; // p(k-1) = p(k)·k/λ
    k -= 1;
    if (p < negligible * p_mode)
      break;
    below.push_back(p);
  }
  std::vector<long double> above; // p(mode), p(mode+1), ...
  for (long double k = mode, p = p_mode;; k += 1) {
    above.push_back(p);
    p *= lam / (k + 1);
    if (p < negligible * p_mode)
      break;
  }
  long double total = 0;
  for (long double p : below)
    total += p;
  for (long double p : above)
    total += p;

  poisson_table t;
  t.lambda = lambda;
  const long double first = mode - static_cast<long double>(below.size());
  const long double scale = 4294967296.0L / total;
  long double cumulative = 0;
  bool started = false;
  auto add = [&](long double k, long double p) {
    cumulative += p;
    const long double edge = std::nearbyint(cumulative * scale);
    if (edge >= 4294967296.0L)
      return false; // every word below 2^32 maps at or before k: the rest is unreachable
    if (!started) {
      if (edge <= 0)
        return true; // no word maps to k
      started = true;
      t.base = static_cast<std::uint32_t>(k);
    }
    t.thresholds.push_back(static_cast<std::uint32_t>(edge));
    return true;
  };
  bool more = true;
  for (std::size_t i = below.size(); more && i-- > 0;)
    more = add(first + static_cast<long double>(below.size() - 1 - i), below[i]);
  for (std::size_t i = 0; more && i < above.size(); ++i)
    more = add(mode + static_cast<long double>(i), above[i]);
  return t;
}

} // namespace cuplug::philox
