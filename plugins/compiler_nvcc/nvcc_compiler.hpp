// The nvcc compiler: CUDA C++ compiled by running the toolkit's nvcc in a private temp dir.
#pragma once

#include <cuplug/compiler.hpp>
#include <cuplug/options.hpp>

#include <mutex>
#include <string>
#include <vector>

namespace cuplug::plugins {

// Option "nvcc": the nvcc to run (a path, or a name looked up on PATH); default $NVCC, else
// `nvcc` on PATH, else $CUDA_PATH/bin, $CUDA_HOME/bin, the build's toolkit. Thread-safe: each
// compile runs in its own temp dir, removed afterwards unless the options say --keep.
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

  std::string nvcc_;
  mutable std::once_flag probed_;
  mutable std::string version_;
  mutable std::vector<int> archs_;
  mutable std::string probe_error_;
};

} // namespace cuplug::plugins
