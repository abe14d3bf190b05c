// The generator table and cuRAND status translation of the curand plugin.
#include "curand_generators.hpp"

#include <cuplug/errors.hpp>

namespace cuplug::plugins::curand {
namespace {

constexpr generator_type types[] = {
    {"philox", CURAND_RNG_PSEUDO_PHILOX4_32_10, false, true, false, false},
    {"xorwow", CURAND_RNG_PSEUDO_XORWOW, false, true, true, false},
    {"mrg32k3a", CURAND_RNG_PSEUDO_MRG32K3A, false, true, true, false},
    {"mtgp32", CURAND_RNG_PSEUDO_MTGP32, false, false, false, false},
    {"mt19937", CURAND_RNG_PSEUDO_MT19937, false, false, false, false},
    {"sobol32", CURAND_RNG_QUASI_SOBOL32, true, true, false, false},
    {"scrambled_sobol32", CURAND_RNG_QUASI_SCRAMBLED_SOBOL32, true, true, false, false},
    {"sobol64", CURAND_RNG_QUASI_SOBOL64, true, true, false, true},
    {"scrambled_sobol64", CURAND_RNG_QUASI_SCRAMBLED_SOBOL64, true, true, false, true},
};

const char *status_name(curandStatus_t s) {
  switch (s) {
  case CURAND_STATUS_SUCCESS:
    return "CURAND_STATUS_SUCCESS";
  case CURAND_STATUS_VERSION_MISMATCH:
    return "CURAND_STATUS_VERSION_MISMATCH";
  case CURAND_STATUS_NOT_INITIALIZED:
    return "CURAND_STATUS_NOT_INITIALIZED";
  case CURAND_STATUS_ALLOCATION_FAILED:
    return "CURAND_STATUS_ALLOCATION_FAILED";
  case CURAND_STATUS_TYPE_ERROR:
    return "CURAND_STATUS_TYPE_ERROR";
  case CURAND_STATUS_OUT_OF_RANGE:
    return "CURAND_STATUS_OUT_OF_RANGE";
  case CURAND_STATUS_LENGTH_NOT_MULTIPLE:
    return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
  case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED:
    return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
  case CURAND_STATUS_LAUNCH_FAILURE:
    return "CURAND_STATUS_LAUNCH_FAILURE";
  case CURAND_STATUS_PREEXISTING_FAILURE:
    return "CURAND_STATUS_PREEXISTING_FAILURE";
  case CURAND_STATUS_INITIALIZATION_FAILED:
    return "CURAND_STATUS_INITIALIZATION_FAILED";
  case CURAND_STATUS_ARCH_MISMATCH:
    return "CURAND_STATUS_ARCH_MISMATCH";
  case CURAND_STATUS_INTERNAL_ERROR:
    return "CURAND_STATUS_INTERNAL_ERROR";
  }
  return "an unknown cuRAND status";
}

} // namespace

const generator_type &generator_named(const std::string &name) {
  std::string names;
  for (const generator_type &g : types) {
    if (name == g.name)
      return g;
    names += names.empty() ? "" : ", ";
    names += g.name;
  }
  throw config_error("rng 'curand': unknown generator \"" + name + "\"; it has: " + names);
}

bool supports(const generator_type &g, rng_distribution distribution, rng_dtype dtype) {
  switch (distribution) {
  case rng_distribution::raw_bits:
    return dtype == (g.bits64 ? rng_dtype::uint64 : rng_dtype::uint32);
  case rng_distribution::uniform:
  case rng_distribution::normal:
  case rng_distribution::lognormal:
    return dtype == rng_dtype::float32 || dtype == rng_dtype::float64;
  case rng_distribution::poisson:
    return dtype == rng_dtype::uint32;
  }
  return false;
}

curandOrdering_t ordering_named(const std::string &name, const generator_type &g) {
  if (name == "default")
    return g.quasi ? CURAND_ORDERING_QUASI_DEFAULT : CURAND_ORDERING_PSEUDO_DEFAULT;
  if (!g.quasi) {
    if (name == "best")
      return CURAND_ORDERING_PSEUDO_BEST;
    if (name == "seeded")
      return CURAND_ORDERING_PSEUDO_SEEDED;
    if (name == "legacy")
      return CURAND_ORDERING_PSEUDO_LEGACY;
    if (name == "dynamic")
      return CURAND_ORDERING_PSEUDO_DYNAMIC;
  }
  throw config_error(
      "rng 'curand': ordering \"" + name + "\" does not apply to generator " + g.name +
      "; it takes: " + (g.quasi ? "default" : "default, best, seeded, legacy, dynamic"));
}

tail_split tail_split_named(const std::string &name) {
  if (name == "auto")
    return tail_split::automatic;
  if (name == "always")
    return tail_split::always;
  if (name == "never")
    return tail_split::never;
  throw config_error("rng 'curand': option split_tails must be \"auto\", \"always\" or "
                     "\"never\", got \"" +
                     name + "\"");
}

bool works_around_tails(tail_split mode, int version, const generator_type &g) {
  if (mode == tail_split::never || g.type != CURAND_RNG_PSEUDO_PHILOX4_32_10)
    return false;
  return mode == tail_split::always || version < first_whole_tails;
}

bool splits_tail(tail_split mode, std::uint64_t offset, std::size_t count) {
  return count % 4 != 0 && (mode == tail_split::always || (offset != 0 && offset % 4 == 0));
}

void check(curandStatus_t status, const char *routine) {
  switch (status) {
  case CURAND_STATUS_SUCCESS:
    return;
  case CURAND_STATUS_ALLOCATION_FAILED:
    throw cuda_error(routine, CUDA_ERROR_OUT_OF_MEMORY, status_name(status));
  case CURAND_STATUS_LAUNCH_FAILURE:
  case CURAND_STATUS_PREEXISTING_FAILURE:
    throw cuda_error(routine, CUDA_ERROR_LAUNCH_FAILED, status_name(status));
  case CURAND_STATUS_INITIALIZATION_FAILED:
    throw cuda_error(routine, CUDA_ERROR_NO_DEVICE,
                     std::string(status_name(status)) + ": cuRAND found no usable GPU");
  case CURAND_STATUS_ARCH_MISMATCH:
  case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED:
    throw cuda_error(routine, CUDA_ERROR_NOT_SUPPORTED, status_name(status));
  default:
    throw error(std::string(routine) + " failed: " + status_name(status));
  }
}

} // namespace cuplug::plugins::curand
