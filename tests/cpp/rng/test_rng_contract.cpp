// The rng contract, instantiated for both rng plugins: their host-memory paths (no GPU needed)
// for every cuRAND generator, and their device paths (skipped without a GPU).
#include "rng_contract.hpp"

namespace {

using cuplug::test::rng_backend;
using cuplug::test::rng_case;

rng_case philox_host_case() { return {rng_backend("philox", {{"memory", "host"}})}; }
rng_case philox_device_case() { return {rng_backend("philox"), true}; }

rng_case curand(const std::string &generator, bool device, unsigned dimensions = 1) {
  std::map<std::string, std::string> opts = {{"generator", generator},
                                             {"memory", device ? "device" : "host"}};
  if (dimensions != 1)
    opts["dimensions"] = std::to_string(dimensions);
  rng_case c{rng_backend("curand", opts), device};
  c.seekable = generator != "mtgp32" && generator != "mt19937";
  c.quasi = generator.find("sobol") != std::string::npos;
  c.dimensions = dimensions;
  c.tables = true;
  return c;
}

#define CURAND_CASES(generator)                                                                    \
  rng_case curand_host_##generator##_case() { return curand(#generator, false); }                  \
  rng_case curand_device_##generator##_case() { return curand(#generator, true); }
CURAND_CASES(philox)
CURAND_CASES(xorwow)
CURAND_CASES(mrg32k3a)
CURAND_CASES(mtgp32)
CURAND_CASES(mt19937)
CURAND_CASES(sobol32)
CURAND_CASES(scrambled_sobol32)
CURAND_CASES(sobol64)
CURAND_CASES(scrambled_sobol64)
#undef CURAND_CASES
rng_case curand_host_sobol32_3d_case() { return curand("sobol32", false, 3); }

} // namespace

using boost::unit_test::label;
using boost::unit_test::precondition;

CUPLUG_RNG_CONTRACT(philox_host, philox_host_case, *label("cpu"))
CUPLUG_RNG_CONTRACT(curand_host_philox, curand_host_philox_case, *label("cpu"))
CUPLUG_RNG_CONTRACT(curand_host_xorwow, curand_host_xorwow_case, *label("cpu"))
// cuRAND's host MRG32k3a (skipping to 2^64) and MT19937 (seeding) take tens of seconds: run
// apart, by test_rng_slow.
#define SLOW *label("cpu") * label("slow") * boost::unit_test::disabled()
CUPLUG_RNG_CONTRACT(curand_host_mrg32k3a, curand_host_mrg32k3a_case, SLOW)
CUPLUG_RNG_CONTRACT(curand_host_mtgp32, curand_host_mtgp32_case, *label("cpu"))
CUPLUG_RNG_CONTRACT(curand_host_mt19937, curand_host_mt19937_case, SLOW)
#undef SLOW
CUPLUG_RNG_CONTRACT(curand_host_sobol32, curand_host_sobol32_case, *label("cpu"))
CUPLUG_RNG_CONTRACT(curand_host_sobol32_3d, curand_host_sobol32_3d_case, *label("cpu"))
CUPLUG_RNG_CONTRACT(curand_host_scrambled_sobol32, curand_host_scrambled_sobol32_case,
                    *label("cpu"))
CUPLUG_RNG_CONTRACT(curand_host_sobol64, curand_host_sobol64_case, *label("cpu"))
CUPLUG_RNG_CONTRACT(curand_host_scrambled_sobol64, curand_host_scrambled_sobol64_case,
                    *label("cpu"))

#define GPU *label("gpu") * precondition(cuplug::test::gpu_present())
CUPLUG_RNG_CONTRACT(philox_device, philox_device_case, GPU)
CUPLUG_RNG_CONTRACT(curand_device_philox, curand_device_philox_case, GPU)
CUPLUG_RNG_CONTRACT(curand_device_xorwow, curand_device_xorwow_case, GPU)
CUPLUG_RNG_CONTRACT(curand_device_mrg32k3a, curand_device_mrg32k3a_case, GPU)
CUPLUG_RNG_CONTRACT(curand_device_mtgp32, curand_device_mtgp32_case, GPU)
CUPLUG_RNG_CONTRACT(curand_device_mt19937, curand_device_mt19937_case, GPU)
CUPLUG_RNG_CONTRACT(curand_device_sobol32, curand_device_sobol32_case, GPU)
CUPLUG_RNG_CONTRACT(curand_device_scrambled_sobol32, curand_device_scrambled_sobol32_case, GPU)
CUPLUG_RNG_CONTRACT(curand_device_sobol64, curand_device_sobol64_case, GPU)
CUPLUG_RNG_CONTRACT(curand_device_scrambled_sobol64, curand_device_scrambled_sobol64_case, GPU)
#undef GPU
