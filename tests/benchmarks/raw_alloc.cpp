// Raw C++ floor for stream-ordered allocation (cuMemAllocAsync + cuMemFreeAsync), and cuplug's
// allocator plugins measured the same way in the same process: "async", "pool" (device
// upstream; on the default stream and on a user stream) and "pool" over host memory.
// Usage: raw_alloc [--bytes N] [--iters I] [--repeats R]
// Prints one line per allocator: "raw_alloc: what=<name> bytes=<n> us=<best us per alloc+free>"
// (bench_alloc.py parses it); the plugins' lines add ratio=<us / raw us>. Each repeat runs I
// allocate+free pairs on one stream (a non-blocking one the program makes, unless the line says
// otherwise), then synchronises; the best repeat counts.
#include <cuda.h>

#include <cuplug/allocator.hpp>
#include <cuplug/config.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>

namespace {

void check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return;
  const char *name = "?";
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "raw_alloc: %s failed: %s\n", what, name);
  std::exit(1);
}

// Best microseconds per allocate+free pair over `repeats` runs of `iters` pairs.
template <class Pair> double best_us(int iters, int repeats, CUstream stream, Pair pair) {
  for (int i = 0; i < std::min(iters, 1000); ++i) // warm-up: the pool fills, the code is hot
    pair();
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i)
      pair();
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
  }
  return best;
}

cuplug::plugin_ptr<cuplug::allocator> make(const std::string &name,
                                           std::map<std::string, std::string> opts = {}) {
  return cuplug::registry::instance().create<cuplug::allocator>(
      cuplug::plugin_kind::allocator, name, cuplug::options(std::move(opts)));
}

double plugin_us(cuplug::allocator &a, std::size_t bytes, int iters, int repeats, CUstream stream) {
  return best_us(iters, repeats, stream, [&] {
    const std::uintptr_t p = a.allocate(bytes, stream);
    a.deallocate(p, bytes, stream);
  });
}

} // namespace

int main(int argc, char **argv) {
  std::size_t bytes = std::size_t{1} << 20;
  int iters = 100000, repeats = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--bytes") && i + 1 < argc)
      bytes = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc)
      repeats = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--bytes N] [--iters I] [--repeats R]\n", argv[0]);
      return 2;
    }
  }
  if (bytes == 0 || iters <= 0 || repeats <= 0) {
    std::fprintf(stderr, "raw_alloc: --bytes, --iters and --repeats must be positive\n");
    return 2;
  }

  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  const double raw = best_us(iters, repeats, stream, [&] {
    CUdeviceptr p;
    check(cuMemAllocAsync(&p, bytes, stream), "cuMemAllocAsync");
    check(cuMemFreeAsync(p, stream), "cuMemFreeAsync");
  });
  std::printf("raw_alloc: what=raw_async bytes=%zu us=%.4f\n", bytes, raw);

  try {
    // The async plugin on the device's default pool, exactly what the raw loop uses.
    auto async_default = make("async", {{"pool", "default"}});
    const double a = plugin_us(*async_default, bytes, iters, repeats, stream);
    std::printf("raw_alloc: what=async_plugin bytes=%zu us=%.4f ratio=%.3f\n", bytes, a, a / raw);
    auto async_own = make("async");
    const double o = plugin_us(*async_own, bytes, iters, repeats, stream);
    std::printf("raw_alloc: what=async_plugin_own_pool bytes=%zu us=%.4f ratio=%.3f\n", bytes, o,
                o / raw);
    // The pool's fast path, on the legacy default stream (as Python's allocations are): no
    // driver call but cuCtxGetCurrent. On a stream the user made, each free also records an
    // event, so that other streams may reuse the block after it.
    auto pool = make("pool");
    const double p = plugin_us(*pool, bytes, iters, repeats, nullptr);
    std::printf("raw_alloc: what=pool_plugin bytes=%zu us=%.4f ratio=%.3f\n", bytes, p, p / raw);
    const double ps = plugin_us(*pool, bytes, iters, repeats, stream);
    std::printf("raw_alloc: what=pool_plugin_user_stream bytes=%zu us=%.4f ratio=%.3f\n", bytes, ps,
                ps / raw);
    pool->free_held();
    auto host_pool = make("pool", {{"upstream", "host"}});
    const double h = plugin_us(*host_pool, bytes, iters, repeats, stream);
    std::printf("raw_alloc: what=pool_over_host bytes=%zu us=%.4f ratio=%.3f\n", bytes, h, h / raw);
    host_pool->free_held();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "raw_alloc: a cuplug allocator failed: %s\n", e.what());
    return 1;
  }
  check(cuStreamDestroy(stream), "cuStreamDestroy");
  cuDevicePrimaryCtxRelease(dev);
  return 0;
}
