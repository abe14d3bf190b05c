// cuLaunchKernelEx: a launch checked like cuLaunchKernel, plus the launch attributes the fake
// models (thread-block clusters, cooperative launches, priority, programmatic serialisation),
// recorded with the launch.
#include "fake_state.hpp"

#include <algorithm>

namespace fake {
namespace {

constexpr int multiprocessors = 132; // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT of the fake H100

CUresult apply(const CUlaunchAttribute &a, const CUlaunchConfig &c, CUfunction f,
               launch_record &r) {
  switch (a.id) {
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: {
    const unsigned k[3] = {a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z};
    const unsigned g[3] = {c.gridDimX, c.gridDimY, c.gridDimZ};
    for (int i = 0; i < 3; ++i)
      if (k[i] == 0 || g[i] % k[i] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned blocks = k[0] * k[1] * k[2];
    if (blocks > (f->non_portable_cluster ? 16u : 8u))
      return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    std::copy(k, k + 3, r.cluster);
    return CUDA_SUCCESS;
  }
  case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: {
    r.cooperative = a.value.cooperative != 0;
    if (!r.cooperative)
      return CUDA_SUCCESS;
    const int threads = int(c.blockDimX * c.blockDimY * c.blockDimZ);
    const unsigned long long blocks = 1ull * c.gridDimX * c.gridDimY * c.gridDimZ;
    const int per_sm = occupancy_blocks_per_sm(f, threads, c.sharedMemBytes);
    if (blocks > 1ull * per_sm * multiprocessors)
      return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    return CUDA_SUCCESS;
  }
  case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    r.priority = a.value.priority;
    return CUDA_SUCCESS;
  case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    return CUDA_SUCCESS; // nothing overlaps in the fake
  default:
    return CUDA_ERROR_NOT_SUPPORTED; // other attributes are not modelled
  }
}

CUresult fake_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                               void **extra) {
  FAKE_API(cuLaunchKernelEx);
  if (!config || (config->numAttrs && !config->attrs))
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx, stream_ctx;
  FAKE_CHECK(current_context(&ctx));
  FAKE_CHECK(check_handle(state().functions, f, "function"));
  FAKE_CHECK(stream_context(config->hStream, &stream_ctx));
  if (f->module->ctx != ctx || stream_ctx != ctx)
    return CUDA_ERROR_INVALID_HANDLE;
  const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
  const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
  launch_record r;
  FAKE_CHECK(check_launch(f, grid, block, config->sharedMemBytes, kernelParams, extra, r));
  for (unsigned i = 0; i < config->numAttrs; ++i)
    FAKE_CHECK(apply(config->attrs[i], *config, f, r));
  r.stream = config->hStream;
  record_launch(std::move(r));
  return CUDA_SUCCESS;
}

} // namespace

void add_launch_ex_entries(entry_table &t) { FAKE_REGISTER(t, cuLaunchKernelEx); }

} // namespace fake
