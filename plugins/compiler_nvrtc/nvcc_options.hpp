// nvcc's spellings of options turned into NVRTC's, so that option lists written for nvcc (PyCUDA's
// own recipes among them) work under the NVRTC backend.
#pragma once

#include <string>
#include <vector>

namespace cuplug::plugins {

// The options NVRTC gets for `options` written for nvcc:
// - host-side options, which mean nothing to a compile of device code alone (-Xcompiler X,
//   -ccbin X, -O3, -g, -m64, -c, -cubin, -keep, -l<lib>, -L<dir>, -Xlinker X, --threads N,
//   --default-stream X, ...), are dropped; so are --extended-lambda (NVRTC's lambdas are device
//   lambdas already) and -Wno-deprecated-gpu-targets;
// - options NVRTC spells differently are renamed: --use-fast-math, -line-info, -res-usage
//   (-Xptxas -v), -isystem D (-I D), --expt-relaxed-constexpr (-default-device: NVRTC refuses
//   host functions, so unannotated constexpr functions must become device functions), and
//   -gencode arch=compute_XY,code=sm_XY / -code=sm_XY (-arch=sm_XY, the first real code named);
// - everything else passes through unchanged, for NVRTC to accept or refuse.
std::vector<std::string> nvrtc_options_from_nvcc(const std::vector<std::string> &options);

// Names this translation's rules (part of the compiler's version, so the cache key changes
// when the rules do).
const char *nvcc_options_rules_version();

} // namespace cuplug::plugins
