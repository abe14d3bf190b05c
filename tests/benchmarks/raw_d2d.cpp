// Raw C++ floor for device memory bandwidth: cuMemcpyDtoD between two device buffers, the
// yardstick every array benchmark (bench_array.py) is a ratio against.
// Usage: raw_d2d [--bytes N]... [--repeats R]
// Prints per size: "raw_d2d: bytes=<n> GBps=<best> median_GBps=<median>" where GB/s counts the
// bytes read plus the bytes written (2 n per copy), 1e9 bytes per second, timed with events.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return;
  const char *name = "?";
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "raw_d2d: %s failed: %s\n", what, name);
  std::exit(1);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::size_t> sizes;
  int repeats = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--bytes") && i + 1 < argc)
      sizes.push_back(std::strtoull(argv[++i], nullptr, 10));
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc)
      repeats = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--bytes N]... [--repeats R]\n", argv[0]);
      return 2;
    }
  }
  if (sizes.empty())
    sizes = {std::size_t(1) << 30};
  if (repeats <= 0) {
    std::fprintf(stderr, "raw_d2d: --repeats must be positive\n");
    return 2;
  }

  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
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
