// The NVRTC compiler: CUDA C++ compiled in process by the toolkit's runtime compiler.
#pragma once

#include <cuplug/compiler.hpp>
#include <cuplug/options.hpp>

#include <string>
#include <vector>

namespace cuplug::plugins {

// Thread-safe: every compile uses its own nvrtcProgram. Takes no options.
class nvrtc_compiler final : public compiler {
public:
  explicit nvrtc_compiler(const options &opts);

private:
  compiled_image do_compile(const compile_request &request) override;
  std::string do_version() const override { return version_; }
  std::vector<int> do_supported_archs() const override { return archs_; }

  // The options NVRTC gets besides the user's: arch, relocation, include paths.
  std::vector<std::string> builtin_options(const compile_request &request) const;
  // Which of `user_options` NVRTC rejects (each tried alone on an empty program).
  std::vector<std::string> rejected_options(const std::vector<std::string> &user_options) const;

  std::string version_;
  std::vector<int> archs_;
  // The toolkit's include dir and its CCCL dir, so CUB / Thrust / libcu++ work in sources.
  std::vector<std::string> toolkit_includes_;
};

} // namespace cuplug::plugins
