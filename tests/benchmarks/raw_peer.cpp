// Raw C++ floor for copies between two GPUs: a cuMemcpyPeerAsync loop from device 0 to device 1
// (peer access enabled both ways where the GPUs have it), the yardstick of bench_multigpu.py.
// Usage: raw_peer [--bytes N]... [--repeats R]
// Prints "raw_peer: peer_access=<0|1>" once, then per size: "raw_peer: bytes=<n> GBps=<best>
// median_GBps=<median>", GB/s counting the bytes copied (n per copy, 1e9 bytes per second), each
// sample the wall time of 10 copies issued back to back and waited for, as bench_multigpu.py
// times cuplug's.
#include "raw_bench.hpp"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

void check(CUresult r, const char *what) { raw_bench::check("raw_peer", r, what); }

constexpr int copies_per_sample = 10;

} // namespace

int main(int argc, char **argv) {
  const auto [sizes, repeats] =
      raw_bench::parse_args(argc, argv, "raw_peer", {std::size_t(256) << 20}, 10);
  check(cuInit(0), "cuInit");
  int count = 0;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count < 2) {
    std::fprintf(stderr, "raw_peer: needs two devices, found %d\n", count);
    return 3;
  }
  CUdevice dev[2];
  CUcontext ctx[2];
  for (int i = 0; i < 2; ++i) {
    check(cuDeviceGet(&dev[i], i), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx[i], dev[i]), "cuDevicePrimaryCtxRetain");
  }
  int can01 = 0, can10 = 0;
  check(cuDeviceCanAccessPeer(&can01, dev[0], dev[1]), "cuDeviceCanAccessPeer");
  check(cuDeviceCanAccessPeer(&can10, dev[1], dev[0]), "cuDeviceCanAccessPeer");
  const bool peer = can01 && can10;
  if (peer) {
    for (int i = 0; i < 2; ++i) {
      check(cuCtxSetCurrent(ctx[i]), "cuCtxSetCurrent");
      CUresult r = cuCtxEnablePeerAccess(ctx[1 - i], 0);
      if (r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
        check(r, "cuCtxEnablePeerAccess");
    }
  }
  std::printf("raw_peer: peer_access=%d\n", peer ? 1 : 0);

  for (std::size_t bytes : sizes) {
    CUdeviceptr src = 0, dst = 0;
    check(cuCtxSetCurrent(ctx[1]), "cuCtxSetCurrent");
    check(cuMemAlloc(&dst, bytes), "cuMemAlloc");
    check(cuCtxSetCurrent(ctx[0]), "cuCtxSetCurrent");
    check(cuMemAlloc(&src, bytes), "cuMemAlloc");
    check(cuMemsetD8(src, 1, bytes), "cuMemsetD8");
    // Warm-up: first touch of both buffers and of the copy path.
    check(cuMemcpyPeerAsync(dst, ctx[1], src, ctx[0], bytes, nullptr), "cuMemcpyPeerAsync");
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    std::vector<double> gbps;
    for (int r = 0; r < repeats; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < copies_per_sample; ++k)
        check(cuMemcpyPeerAsync(dst, ctx[1], src, ctx[0], bytes, nullptr), "cuMemcpyPeerAsync");
      check(cuCtxSynchronize(), "cuCtxSynchronize");
      std::chrono::duration<double> s = std::chrono::steady_clock::now() - t0;
      gbps.push_back(copies_per_sample * static_cast<double>(bytes) / s.count() / 1e9);
    }
    std::sort(gbps.begin(), gbps.end());
    std::printf("raw_peer: bytes=%zu GBps=%.1f median_GBps=%.1f\n", bytes, gbps.back(),
                gbps[gbps.size() / 2]);
    check(cuMemFree(src), "cuMemFree");
    check(cuCtxSetCurrent(ctx[1]), "cuCtxSetCurrent");
    check(cuMemFree(dst), "cuMemFree");
  }
  check(cuCtxSetCurrent(nullptr), "cuCtxSetCurrent");
  for (int i = 0; i < 2; ++i)
    cuDevicePrimaryCtxRelease(dev[i]);
  return 0;
}
