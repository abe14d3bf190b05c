// The nvcc compiler: CUDA C++ compiled by running the toolkit's nvcc in a private temp dir.
#pragma once

#include <cuplug/compiler.hpp>
#include <cuplug/gpu_arch.hpp>
#include <cuplug/options.hpp>

#include <mutex>
#include <string>
#include <vector>

namespace cuplug::plugins {

// Option "nvcc": the nvcc to run (a path, or a name looked up on PATH; made absolute); default
// $NVCC, else bin/nvcc of the first folder of cuplug's toolkit search order (cuplug/toolkit.hpp:
// $CUDAToolkit_ROOT, $CUDA_PATH, $CUDA_HOME, $CUDA_ROOT, pip wheels, nvcc on PATH, /usr/local/cuda,
// the build's toolkit) that has one. Option
// "timeout": seconds a compile may take (default $CUPLUG_COMPILE_TIMEOUT, else 600; 0: none),
// after which nvcc and all it started are killed. Thread-safe: each compile writes its files in
// its own private dir, removed afterwards unless keep_files (or --keep) asks to keep them; nvcc
// runs in the caller's working directory, so relative paths in options work. nvcc lists the
// files it read (-MD) for the cache.
class nvcc_compiler final : public compiler {
public:
  explicit nvcc_compiler(const options &opts);
  const std::string &nvcc_path() const noexcept { return nvcc_; }

private:
  compiled_image do_compile(const compile_request &request) override;
  std::string do_version() const override;
  std::vector<int> do_supported_archs() const override;

  // `nvcc --version` and `nvcc --list-gpu-arch`, run once on first need.
  void probe() const;
  // The steps of do_compile that depend on this nvcc. The program to run: the configured nvcc,
  // or the one the request names (found on PATH), else config_error.
  std::string program_for(const compile_request &request) const;
  // "-arch=sm_90" (compute_ for PTX or with -code) for the request's arch, checked against what
  // the configured nvcc supports; empty when none is asked for or the user's options choose it.
  std::string arch_flag(const compile_request &request) const;

  std::string nvcc_;
  std::string timeout_option_;
  mutable std::once_flag probed_;
  mutable std::string version_;
  mutable std::vector<int> archs_;
  mutable std::string probe_error_;
};

} // namespace cuplug::plugins
