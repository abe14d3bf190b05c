// What the raw C++ launch baselines (raw_launch, raw_graph) share: one kernel compiled by NVRTC for
// device 0 and loaded in its primary context, and its PTX written out (--ptx-out) so that the
// Python side of the benchmark loads exactly the same kernel.
#pragma once

#include "raw_bench.hpp"

#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace raw_kernel {

inline void check_nvrtc(const char *program, nvrtcResult r, const char *what) {
  if (r == NVRTC_SUCCESS)
    return;
  std::fprintf(stderr, "%s: %s failed: %s\n", program, what, nvrtcGetErrorString(r));
  std::exit(1);
}

// PTX of `source` for compute capability major.minor.
inline std::string compile_ptx(const char *program, const char *source, const char *file, int major,
                               int minor) {
  nvrtcProgram prog;
  check_nvrtc(program, nvrtcCreateProgram(&prog, source, file, 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  const std::string arch = "--gpu-architecture=compute_" + std::to_string(major * 10 + minor);
  const char *opts[] = {arch.c_str()};
  check_nvrtc(program, nvrtcCompileProgram(prog, 1, opts), "nvrtcCompileProgram");
  size_t size = 0;
  check_nvrtc(program, nvrtcGetPTXSize(prog, &size), "nvrtcGetPTXSize");
  std::string ptx(size, '\0');
  check_nvrtc(program, nvrtcGetPTX(prog, ptx.data()), "nvrtcGetPTX");
  nvrtcDestroyProgram(&prog);
  return ptx;
}

struct loaded_kernel {
  CUdevice dev;
  char name[256]; // the device's
  CUmodule module;
  CUfunction function;
};

// Device 0's primary context made current, `kernel` of `source` compiled and loaded there; the
// PTX written to `ptx_out` unless it is null. The caller unloads the module and releases the
// primary context.
inline loaded_kernel load(const char *program, const char *source, const char *file,
                          const char *kernel, const char *ptx_out) {
  loaded_kernel k{};
  k.dev = raw_bench::use_primary_context(program);
  raw_bench::check(program, cuDeviceGetName(k.name, sizeof k.name, k.dev), "cuDeviceGetName");
  int major = 0, minor = 0;
  raw_bench::check(
      program, cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, k.dev),
      "cuDeviceGetAttribute");
  raw_bench::check(
      program, cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, k.dev),
      "cuDeviceGetAttribute");
  const std::string ptx = compile_ptx(program, source, file, major, minor);
  if (ptx_out != nullptr)
    std::ofstream(ptx_out, std::ios::binary).write(ptx.c_str(), std::strlen(ptx.c_str()));
  raw_bench::check(program, cuModuleLoadData(&k.module, ptx.c_str()), "cuModuleLoadData");
  raw_bench::check(program, cuModuleGetFunction(&k.function, k.module, kernel),
                   "cuModuleGetFunction");
  return k;
}

} // namespace raw_kernel
