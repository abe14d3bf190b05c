// Raw C++ floor for random number generation: cuRAND's host API filling device memory, per
// generator and distribution, the baseline bench_rng.py measures the rng plugins against.
// Usage: raw_rng [--bytes N]... [--repeats R]
// Prints per size, generator and kind:
//   "raw_rng: generator=<g> kind=<uniform_f32|normal_f32|uniform_f64> bytes=<n> GBps=<best>
//    median_GBps=<median> create_ms=<generator creation and first call>"
// where GB/s counts the bytes written, 1e9 bytes per second, timed with events.
#include "raw_bench.hpp"

#include <cuda.h>
#include <curand.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(CUresult r, const char *what) { raw_bench::check("raw_rng", r, what); }

void check(curandStatus_t s, const char *what) {
  if (s == CURAND_STATUS_SUCCESS)
    return;
  std::fprintf(stderr, "raw_rng: %s failed: cuRAND status %d\n", what, static_cast<int>(s));
  std::exit(1);
}

struct generator {
  const char *name;
  curandRngType_t type;
};

const generator generators[] = {
    {"philox", CURAND_RNG_PSEUDO_PHILOX4_32_10},
    {"xorwow", CURAND_RNG_PSEUDO_XORWOW},
    {"mrg32k3a", CURAND_RNG_PSEUDO_MRG32K3A},
    {"mtgp32", CURAND_RNG_PSEUDO_MTGP32},
    {"mt19937", CURAND_RNG_PSEUDO_MT19937},
    {"sobol32", CURAND_RNG_QUASI_SOBOL32},
    {"scrambled_sobol32", CURAND_RNG_QUASI_SCRAMBLED_SOBOL32},
    {"sobol64", CURAND_RNG_QUASI_SOBOL64},
    {"scrambled_sobol64", CURAND_RNG_QUASI_SCRAMBLED_SOBOL64},
};

enum class kind { uniform_f32, normal_f32, uniform_f64 };
const char *name(kind k) {
  return k == kind::uniform_f32  ? "uniform_f32"
         : k == kind::normal_f32 ? "normal_f32"
                                 : "uniform_f64";
}

void fill(curandGenerator_t g, kind k, CUdeviceptr out, std::size_t bytes) {
  switch (k) {
  case kind::uniform_f32:
    check(curandGenerateUniform(g, reinterpret_cast<float *>(out), bytes / 4), "uniform");
    break;
  case kind::normal_f32:
    check(curandGenerateNormal(g, reinterpret_cast<float *>(out), bytes / 8 * 2, 0.f, 1.f),
          "normal");
    break;
  case kind::uniform_f64:
    check(curandGenerateUniformDouble(g, reinterpret_cast<double *>(out), bytes / 8), "double");
    break;
  }
}

} // namespace

int main(int argc, char **argv) {
  const auto [sizes, repeats] =
      raw_bench::parse_args(argc, argv, "raw_rng", {std::size_t(1) << 30}, 10);
  const CUdevice dev = raw_bench::use_primary_context("raw_rng");
  CUevent start, stop;
  check(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  for (std::size_t bytes : sizes) {
    CUdeviceptr out = 0;
    check(cuMemAlloc(&out, bytes), "cuMemAlloc");
    for (const generator &gen : generators) {
      for (kind k : {kind::uniform_f32, kind::normal_f32, kind::uniform_f64}) {
        const auto t0 = std::chrono::steady_clock::now();
        curandGenerator_t g = nullptr;
        check(curandCreateGenerator(&g, gen.type), "curandCreateGenerator");
        check(curandSetStream(g, nullptr), "curandSetStream");
        fill(g, k, out, bytes); // warm-up: the generator sets up its states on first use
        check(cuCtxSynchronize(), "cuCtxSynchronize");
        const double create_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        std::vector<double> gbps;
        for (int r = 0; r < repeats; ++r) {
          check(cuEventRecord(start, nullptr), "cuEventRecord");
          fill(g, k, out, bytes);
          check(cuEventRecord(stop, nullptr), "cuEventRecord");
          check(cuEventSynchronize(stop), "cuEventSynchronize");
          float ms = 0;
          check(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
          gbps.push_back(static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
        }
        std::sort(gbps.begin(), gbps.end());
        std::printf("raw_rng: generator=%s kind=%s bytes=%zu GBps=%.1f median_GBps=%.1f "
                    "create_ms=%.2f\n",
                    gen.name, name(k), bytes, gbps.back(), gbps[gbps.size() / 2], create_ms);
        std::fflush(stdout);
        check(curandDestroyGenerator(g), "curandDestroyGenerator");
      }
    }
    check(cuMemFree(out), "cuMemFree");
  }
  cuEventDestroy(start);
  cuEventDestroy(stop);
  cuDevicePrimaryCtxRelease(dev);
  return 0;
}
