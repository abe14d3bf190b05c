// cuRAND's generator types by the names the curand plugin's `generator` option takes, and what
// each one can do through the host API.
#pragma once

#include <cuplug/rng.hpp>

#include <curand.h>

#include <cstddef>
#include <cstdint>
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

// cuRAND 10.3.1 to 10.3.3 (CUDA 12.0 to 12.2) get Philox positions wrong, and say success, in
// every ordering (default, best and legacy, which give Philox the same values):
// - a call that starts at an offset that is a nonzero multiple of 4 leaves its last count % 4
//   values unwritten: uniform, double, raw bits and normal values alike (their host generators
//   at every such offset tried, 4 to 65540; 10.3.1's device generator at 1016 on an H200);
// - after a call of a count that is not a multiple of 4 the next one does not start where it
//   ended (after one value at offset 1 the next call began at offset 1 again).
// 10.3.4 and later (10.4 too) have neither. With the faulty ones the plugin sets the offset before
// each Philox call, and makes a call that would lose its tail as one of the next multiple of 4
// values into scratch memory, of which it keeps `count`: a longer call begins with the values of a
// shorter one (cuRAND 10.4 and 10.3.1, every distribution, up to a million values), and a call
// of a multiple of 4 values is whole. `split_tails`: "auto" with the faulty ones, "always" (any
// cuRAND: what the tests use to check the workaround), "never". After a double call, 10.3.1's next
// call on the same generator goes on otherwise than 10.4's; cuplug's streams start the backend
// afresh after double calls (cuplug/_rng/stream.py), so their values depend on (seed, offset) only.
enum class tail_split { automatic, always, never };
tail_split tail_split_named(const std::string &name);
// The first cuRAND without the fault (its version number, curandGetVersion).
constexpr int first_whole_tails = 10304; // 10.3.4
// Whether calls of this generator go around the fault.
bool works_around_tails(tail_split mode, int version, const generator_type &g);
// Whether a call of `count` values at `offset` is made as a rounded-up one.
bool splits_tail(tail_split mode, std::uint64_t offset, std::size_t count);

// Throws for a failed cuRAND call: cuda_error for what the driver would call out of memory,
// launch failure or no device, cuplug::error with the status name otherwise.
void check(curandStatus_t status, const char *routine);

} // namespace cuplug::plugins::curand
