// Raw C++ floor for kernel launch overhead: N cuLaunchKernel calls of an empty kernel.
// Usage: raw_launch [--iters N] [--repeats R] [--ptx-out FILE]
// Prints one line: "raw_launch: us_per_launch=<best> median_us=<median> ..." (bench_launch.py
// parses it). --ptx-out writes the PTX it launched, so Python loads exactly the same kernel.
#include "raw_kernel.hpp"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// The benchmark kernel: a pointer and a count, like a typical elementwise kernel, doing nothing.
const char *const kernel_source = R"(
extern "C" __global__ void empty_kernel(float *data, int n) {}
)";

void check(CUresult r, const char *what) { raw_bench::check("raw_launch", r, what); }

} // namespace

int main(int argc, char **argv) {
  int iters = 20000, repeats = 15;
  const char *ptx_out = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc)
      repeats = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--ptx-out") && i + 1 < argc)
      ptx_out = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--iters N] [--repeats R] [--ptx-out FILE]\n", argv[0]);
      return 2;
    }
  }
  if (iters <= 0 || repeats <= 0) {
    std::fprintf(stderr, "raw_launch: --iters and --repeats must be positive\n");
    return 2;
  }

  const raw_kernel::loaded_kernel k =
      raw_kernel::load("raw_launch", kernel_source, "empty_kernel.cu", "empty_kernel", ptx_out);
  const CUfunction function = k.function;
  const char *const name = k.name;

  CUdeviceptr data;
  check(cuMemAlloc(&data, 1024), "cuMemAlloc");
  int n = 256;
  void *params[] = {&data, &n};
  auto launch_batch = [&](int count) {
    for (int i = 0; i < count; ++i)
      check(cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
            "cuLaunchKernel");
    check(cuCtxSynchronize(), "cuCtxSynchronize");
  };

  // The same launches with the parameters as one packed buffer (CU_LAUNCH_PARAM_BUFFER_POINTER),
  // the form cuplug's driver launcher and PyCUDA pass: whether the driver takes it as fast as an
  // array of pointers is part of what separates cuplug's launch from the raw one.
  // The buffer is the parameters' bytes and no more: 12, not sizeof of a struct of the two (16,
  // with its tail padding), which the driver refuses as CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (H200,
  // 2026-11-28). PyCUDA's struct.pack and cuplug's packer make the same 12.
  alignas(8) unsigned char packed[sizeof(CUdeviceptr) + sizeof(int)];
  std::memcpy(packed, &data, sizeof(CUdeviceptr));
  std::memcpy(packed + sizeof(CUdeviceptr), &n, sizeof(int));
  std::size_t packed_size = sizeof(packed);
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &packed_size, CU_LAUNCH_PARAM_END};
  auto launch_batch_extra = [&](int count) {
    for (int i = 0; i < count; ++i)
      check(cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra),
            "cuLaunchKernel (extra)");
    check(cuCtxSynchronize(), "cuCtxSynchronize");
  };
  auto time_batches = [&](auto &&batch) {
    std::vector<double> per_launch_us;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      batch(iters);
      const auto t1 = std::chrono::steady_clock::now();
      per_launch_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
    }
    std::sort(per_launch_us.begin(), per_launch_us.end());
    return per_launch_us;
  };

  launch_batch(2000); // warm-up: module JIT, first-launch setup
  launch_batch_extra(2000);
  const std::vector<double> per_launch_us = time_batches(launch_batch);
  const std::vector<double> extra_us = time_batches(launch_batch_extra);
  std::printf("raw_launch: us_per_launch=%.3f median_us=%.3f extra_us_per_launch=%.3f "
              "extra_median_us=%.3f iters=%d repeats=%d device=%s\n",
              per_launch_us.front(), per_launch_us[per_launch_us.size() / 2], extra_us.front(),
              extra_us[extra_us.size() / 2], iters, repeats, name);

  cuMemFree(data);
  cuModuleUnload(k.module);
  cuDevicePrimaryCtxRelease(k.dev);
  return 0;
}
