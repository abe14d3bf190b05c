// The NVRTC compiler: CUDA C++ compiled in process by the toolkit's runtime compiler.
#pragma once

#include <cuplug/compiler.hpp>
#include <cuplug/gpu_arch.hpp>
#include <cuplug/options.hpp>

#include <string>
#include <vector>

namespace cuplug::plugins {

// Thread-safe: every compile uses its own nvrtcProgram. Option "timeout": seconds a compile may
// take (default $CUPLUG_COMPILE_TIMEOUT, else 600; 0: none); NVRTC checks it, and Ctrl-C (the
// request's `cancelled`), between its optimisation steps, not while it parses. NVRTC cannot list
// the files it read, so each compile scans the source's includes (scan_includes) for the cache.
class nvrtc_compiler final : public compiler {
public:
  explicit nvrtc_compiler(const options &opts);

private:
  compiled_image do_compile(const compile_request &request) override;
  std::string do_version() const override { return version_; }
  std::vector<int> do_supported_archs() const override { return archs_; }

  // The options NVRTC gets besides the user's (`user`: the request's, in NVRTC's spelling):
  // arch, relocation, debug, include paths.
  std::vector<std::string> builtin_options(const compile_request &request,
                                           const std::vector<std::string> &user) const;
  // What the compile with these options can read, found by scanning includes.
  compile_inputs scan(const compile_request &request, const std::vector<std::string> &opts) const;
  // Which of `user_options` NVRTC rejects (each tried alone on an empty program).
  std::vector<std::string> rejected_options(const std::vector<std::string> &user_options) const;

  std::string version_;
  std::vector<int> archs_;
  std::string timeout_option_;
  // The toolkit's include dir and its CCCL dir, so CUB / Thrust / libcu++ work in sources.
  std::vector<std::string> toolkit_includes_;
};

} // namespace cuplug::plugins
