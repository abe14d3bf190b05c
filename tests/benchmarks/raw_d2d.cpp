// Raw C++ floor for device memory bandwidth: cuMemcpyDtoD between two device buffers, the
// yardstick every array benchmark (bench_array.py) is a ratio against.
// Usage: raw_d2d [--bytes N]... [--repeats R]
// Prints per size: "raw_d2d: bytes=<n> GBps=<best> median_GBps=<median>" where GB/s counts the
// bytes read plus the bytes written (2 n per copy), 1e9 bytes per second, timed with events.
#include "raw_bench.hpp"

#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void check(CUresult r, const char *what) { raw_bench::check("raw_d2d", r, what); }

} // namespace

int main(int argc, char **argv) {
  const auto [sizes, repeats] =
      raw_bench::parse_args(argc, argv, "raw_d2d", {std::size_t(1) << 30}, 20);
  const CUdevice dev = raw_bench::use_primary_context("raw_d2d");
  CUevent start, stop;
  check(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");

  for (std::size_t bytes : sizes) {
    CUdeviceptr src = 0, dst = 0;
    check(cuMemAlloc(&src, bytes), "cuMemAlloc");
    check(cuMemAlloc(&dst, bytes), "cuMemAlloc");
    check(cuMemsetD8(src, 1, bytes), "cuMemsetD8");
    check(cuMemcpyDtoD(dst, src, bytes), "cuMemcpyDtoD"); // warm-up: first touch
    std::vector<double> gbps;
    for (int r = 0; r < repeats; ++r) {
      check(cuEventRecord(start, nullptr), "cuEventRecord");
      check(cuMemcpyDtoDAsync(dst, src, bytes, nullptr), "cuMemcpyDtoDAsync");
      check(cuEventRecord(stop, nullptr), "cuEventRecord");
      check(cuEventSynchronize(stop), "cuEventSynchronize");
      float ms = 0;
      check(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
      gbps.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
    }
    std::sort(gbps.begin(), gbps.end());
    std::printf("raw_d2d: bytes=%zu GBps=%.1f median_GBps=%.1f\n", bytes, gbps.back(),
                gbps[gbps.size() / 2]);
    check(cuMemFree(src), "cuMemFree");
    check(cuMemFree(dst), "cuMemFree");
  }
  cuEventDestroy(start);
  cuEventDestroy(stop);
  cuDevicePrimaryCtxRelease(dev);
  return 0;
}
