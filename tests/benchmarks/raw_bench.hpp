// What the raw C++ bandwidth baselines share: the exit-on-error check, their command line
// (--bytes N... --repeats R) and the primary context of device 0 they run in.
#pragma once

#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace raw_bench {

// Prints "<program>: <what> failed: <CUresult name>" and exits 1 unless `r` is CUDA_SUCCESS.
inline void check(const char *program, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return;
  const char *name = "?";
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "%s: %s failed: %s\n", program, what, name);
  std::exit(1);
}

struct sizes_and_repeats {
  std::vector<std::size_t> sizes;
  int repeats;
};

// --bytes N (repeatable; `default_sizes` when none) and --repeats R (> 0). Usage errors print a
// message and exit 2.
inline sizes_and_repeats parse_args(int argc, char **argv, const char *program,
                                    std::vector<std::size_t> default_sizes, int default_repeats) {
  sizes_and_repeats args{{}, default_repeats};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--bytes") && i + 1 < argc)
      args.sizes.push_back(std::strtoull(argv[++i], nullptr, 10));
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc)
      args.repeats = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--bytes N]... [--repeats R]\n", argv[0]);
      std::exit(2);
    }
  }
  if (args.sizes.empty())
    args.sizes = std::move(default_sizes);
  if (args.repeats <= 0) {
    std::fprintf(stderr, "%s: --repeats must be positive\n", program);
    std::exit(2);
  }
  return args;
}

// Initialises the driver and makes device 0's primary context current; returns the device (the
// caller releases its primary context at the end).
inline CUdevice use_primary_context(const char *program) {
  check(program, cuInit(0), "cuInit");
  CUdevice dev;
  check(program, cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(program, cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(program, cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  return dev;
}

} // namespace raw_bench
