// Raw C++ floor for pinned host<->device bandwidth: cuMemHostAlloc + cuMemcpyHtoD / DtoH.
// Usage: raw_copy [--bytes N]... [--repeats R]
// Prints per size: "raw_copy: bytes=<n> h2d_GBps=<best> d2h_GBps=<best>" (bench_copy.py parses
// it); GB/s are 1e9 bytes per second, the best of R copies.
#include "raw_bench.hpp"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void check(CUresult r, const char *what) { raw_bench::check("raw_copy", r, what); }

template <class Copy> double best_gbps(std::size_t bytes, int repeats, Copy copy) {
  copy(); // warm-up: first touch of the mappings
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    copy();
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    const auto t1 = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    best = std::max(best, static_cast<double>(bytes) / seconds / 1e9);
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  const auto [sizes, repeats] = raw_bench::parse_args(
      argc, argv, "raw_copy", {std::size_t(64) << 20, std::size_t(256) << 20, std::size_t(1) << 30},
      10);
  const CUdevice dev = raw_bench::use_primary_context("raw_copy");

  for (std::size_t bytes : sizes) {
    void *host = nullptr;
    CUdeviceptr device = 0;
    check(cuMemHostAlloc(&host, bytes, 0), "cuMemHostAlloc");
    check(cuMemAlloc(&device, bytes), "cuMemAlloc");
    std::memset(host, 1, bytes);
    const double h2d = best_gbps(bytes, repeats,
                                 [&] { check(cuMemcpyHtoD(device, host, bytes), "cuMemcpyHtoD"); });
    const double d2h = best_gbps(bytes, repeats,
                                 [&] { check(cuMemcpyDtoH(host, device, bytes), "cuMemcpyDtoH"); });
    std::printf("raw_copy: bytes=%zu h2d_GBps=%.2f d2h_GBps=%.2f\n", bytes, h2d, d2h);
    check(cuMemFree(device), "cuMemFree");
    check(cuMemFreeHost(host), "cuMemFreeHost");
  }
  cuDevicePrimaryCtxRelease(dev);
  return 0;
}
