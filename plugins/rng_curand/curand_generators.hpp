// cuRAND's generator types by the names the curand plugin's `generator` option takes, and what
// each one can do through the host API.
#pragma once

#include <cuplug/rng.hpp>

#include <curand.h>

#include <string>

namespace cuplug::plugins::curand {

struct generator_type {
  const char *name; // "philox", "xorwow", ...
  curandRngType_t type;
  bool quasi;         // Sobol: no seed, `dimensions` interleaved streams
  bool seekable;      // curandSetGeneratorOffset works (not for the Mersenne twisters)
  bool pairs_advance; // a normal / lognormal pair moves cuRAND's offset by one (XORWOW, MRG)
  bool bits64;        // raw values are uint64 (Sobol64), else uint32
};

// The type named `name`; config_error listing the names otherwise.
const generator_type &generator_named(const std::string &name);
bool supports(const generator_type &g, rng_distribution distribution, rng_dtype dtype);

// curandOrdering_t for the `ordering` option ("default", "best", "seeded", "legacy", "dynamic");
// config_error for other names or one that does not apply to the generator.
curandOrdering_t ordering_named(const std::string &name, const generator_type &g);

// Throws for a failed cuRAND call: cuda_error for what the driver would call out of memory,
// launch failure or no device, cuplug::error with the status name otherwise.
void check(curandStatus_t status, const char *routine);

} // namespace cuplug::plugins::curand
