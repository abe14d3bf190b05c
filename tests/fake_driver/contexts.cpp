// Primary and created contexts, the per-thread context stack, limits, cache and shared-memory
// configuration, peer access between contexts, the profiler switches.
#include "fake_state.hpp"

#include <algorithm>
#include <cstring>

namespace fake {

CUcontext new_context(int device, unsigned flags, bool primary) {
  auto &reusable = state().reusable_contexts;
  CUctx_st *ctx;
  if (!primary && state().reuse_context_handles && !reusable.empty()) {
    ctx = reusable.back(); // the real driver often gives a new context a destroyed one's handle
    reusable.pop_back();
    *ctx = CUctx_st{};
  } else {
    ctx = new CUctx_st;
  }
  ctx->device = device;
  ctx->flags = flags;
  ctx->primary = primary;
  ctx->alive = !primary; // a primary context lives while retained
  ctx->id = state().next_id++;
  state().contexts.insert(ctx);
  return ctx;
}

namespace {

// What cuCtxGetApiVersion reports for every context.
constexpr unsigned context_api_version = 3020;

CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  FAKE_API(cuDevicePrimaryCtxRetain);
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  CUcontext ctx = state().primary[dev];
  if (ctx->primary_refcount++ == 0) {
    ctx->alive = true;
    ctx->limits = limits_t{};
    ctx->cache_config = CU_FUNC_CACHE_PREFER_NONE;
  }
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev) {
  FAKE_API(cuDevicePrimaryCtxRelease);
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  CUcontext ctx = state().primary[dev];
  if (ctx->primary_refcount == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (--ctx->primary_refcount == 0) {
    release_context_resources(ctx);
    ctx->alive = false;
  }
  return CUDA_SUCCESS;
}

CUresult fake_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  FAKE_API(cuDevicePrimaryCtxGetState);
  if (!flags || !active)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  CUcontext ctx = state().primary[dev];
  *flags = ctx->flags;
  *active = ctx->primary_refcount > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

// Created contexts and the stack ---------------------------------------------------------------

bool valid_context_flags(unsigned flags) {
  if (flags & ~unsigned(CU_CTX_FLAGS_MASK))
    return false;
  unsigned sched = flags & CU_CTX_SCHED_MASK;
  return sched == CU_CTX_SCHED_AUTO || sched == CU_CTX_SCHED_SPIN || sched == CU_CTX_SCHED_YIELD ||
         sched == CU_CTX_SCHED_BLOCKING_SYNC;
}

// Creates a context and pushes it. Execution affinity needs MPS, which the fake has not.
CUresult create_context(CUcontext *pctx, bool affinity, bool cig, unsigned flags, CUdevice dev) {
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  if (!valid_context_flags(flags))
    return CUDA_ERROR_INVALID_VALUE;
  if (affinity && cig)
    return CUDA_ERROR_INVALID_VALUE;
  if (affinity)
    return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
  if (cig)
    return CUDA_ERROR_NOT_SUPPORTED;
  CUcontext ctx = new_context(dev, flags, false);
  ctx_stack().push_back(ctx);
  *pctx = ctx;
  return CUDA_SUCCESS;
}

// cuCtxCreate_v4 (CUDA 12.5+), what CUDA 13 callers get.
CUresult fake_cuCtxCreate(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                          CUdevice dev) {
  FAKE_API(cuCtxCreate);
  bool affinity = ctxCreateParams && ctxCreateParams->execAffinityParams &&
                  ctxCreateParams->numExecAffinityParams;
  bool cig = ctxCreateParams && ctxCreateParams->cigParams;
  return create_context(pctx, affinity, cig, flags, dev);
}

// cuCtxCreate_v3 (CUDA 11.4) and cuCtxCreate_v2 (CUDA 3.2), for callers asking for those.
CUresult fake_cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                             unsigned int flags, CUdevice dev) {
  FAKE_API(cuCtxCreate);
  count_form_call("cuCtxCreate", 11040);
  return create_context(pctx, paramsArray && numParams > 0, false, flags, dev);
}

CUresult fake_cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  FAKE_API(cuCtxCreate);
  count_form_call("cuCtxCreate", 3020);
  return create_context(pctx, false, false, flags, dev);
}

CUresult fake_cuCtxDestroy(CUcontext ctx) {
  FAKE_API(cuCtxDestroy);
  FAKE_CHECK(check_context(ctx));
  if (ctx->primary)
    return CUDA_ERROR_INVALID_CONTEXT;
  release_context_resources(ctx);
  ctx->alive = false;
  state().contexts.erase(ctx); // later uses of the handle: invalid context
  if (state().reuse_context_handles)
    state().reusable_contexts.push_back(ctx);
  auto &stack = ctx_stack();
  if (!stack.empty() && stack.back() == ctx)
    stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxPushCurrent(CUcontext ctx) {
  FAKE_API(cuCtxPushCurrent);
  FAKE_CHECK(check_context(ctx));
  ctx_stack().push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxPopCurrent(CUcontext *pctx) {
  FAKE_API(cuCtxPopCurrent);
  auto &stack = ctx_stack();
  if (stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx)
    *pctx = stack.back();
  stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetCurrent(CUcontext *pctx) {
  FAKE_API(cuCtxGetCurrent);
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  auto &stack = ctx_stack();
  *pctx = stack.empty() ? nullptr : stack.back();
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxSetCurrent(CUcontext ctx) {
  FAKE_API(cuCtxSetCurrent);
  auto &stack = ctx_stack();
  if (ctx == nullptr) {
    if (!stack.empty())
      stack.pop_back();
    return CUDA_SUCCESS;
  }
  FAKE_CHECK(check_context(ctx));
  if (stack.empty())
    stack.push_back(ctx);
  else
    stack.back() = ctx;
  return CUDA_SUCCESS;
}

// `ctx`, or the current context when it is null (the CUDA 13 forms taking a context).
CUresult context_or_current(CUcontext ctx, CUcontext *out) {
  if (ctx == nullptr)
    return current_context(out);
  FAKE_CHECK(check_context(ctx));
  *out = ctx;
  return CUDA_SUCCESS;
}

CUresult get_device(CUdevice *device, CUcontext ctx) {
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(context_or_current(ctx, &ctx));
  *device = ctx->device;
  return CUDA_SUCCESS;
}

// cuCtxGetDevice_v2 (CUDA 13.0): what cuGetProcAddress gives for "cuCtxGetDevice" at 13000.
CUresult fake_cuCtxGetDevice(CUdevice *device, CUcontext ctx) {
  FAKE_API(cuCtxGetDevice);
  return get_device(device, ctx);
}

CUresult fake_cuCtxGetDevice_v1(CUdevice *device) {
  FAKE_API(cuCtxGetDevice);
  count_form_call("cuCtxGetDevice", 2000);
  return get_device(device, nullptr);
}

CUresult synchronize(CUcontext ctx) {
  FAKE_CHECK(context_or_current(ctx, &ctx));
  trim_pools_on_sync();
  return CUDA_SUCCESS;
}

// cuCtxSynchronize_v2 (CUDA 13.0): what cuGetProcAddress gives for "cuCtxSynchronize" at 13000.
CUresult fake_cuCtxSynchronize(CUcontext ctx) {
  FAKE_API(cuCtxSynchronize);
  return synchronize(ctx);
}

CUresult fake_cuCtxSynchronize_v1() {
  FAKE_API(cuCtxSynchronize);
  count_form_call("cuCtxSynchronize", 2000);
  return synchronize(nullptr);
}

// How each limit behaves on Hopper with driver 580: settable, readable only, or unsupported.
enum class limit_kind { settable, read_only, unsupported };
limit_kind kind_of(CUlimit limit) {
  switch (limit) {
  case CU_LIMIT_SHMEM_SIZE:
  case CU_LIMIT_CIG_ENABLED:
    return limit_kind::read_only;
  case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH: // CUDA Dynamic Parallelism 2 has no device-side sync
  case CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED:
    return limit_kind::unsupported;
  default:
    return limit_kind::settable;
  }
}

CUresult fake_cuCtxSetLimit(CUlimit limit, size_t value) {
  FAKE_API(cuCtxSetLimit);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (unsigned(limit) > CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED)
    return CUDA_ERROR_INVALID_VALUE;
  if (kind_of(limit) == limit_kind::unsupported)
    return CUDA_ERROR_UNSUPPORTED_LIMIT;
  if (kind_of(limit) == limit_kind::read_only)
    return CUDA_ERROR_NOT_PERMITTED;
  if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value > 128)
    return CUDA_ERROR_INVALID_VALUE;
  if (limit == CU_LIMIT_PERSISTING_L2_CACHE_SIZE) {
    int max = 0;
    device_attribute(&max, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, ctx->device);
    if (value > size_t(max))
      return CUDA_ERROR_INVALID_VALUE;
  }
  ctx->limits.values[limit] = value;
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetLimit(size_t *pvalue, CUlimit limit) {
  FAKE_API(cuCtxGetLimit);
  if (!pvalue)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (unsigned(limit) > CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED)
    return CUDA_ERROR_INVALID_VALUE;
  if (kind_of(limit) == limit_kind::unsupported)
    return CUDA_ERROR_UNSUPPORTED_LIMIT;
  *pvalue = ctx->limits.values[limit];
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxSetCacheConfig(CUfunc_cache config) {
  FAKE_API(cuCtxSetCacheConfig);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (unsigned(config) > CU_FUNC_CACHE_PREFER_EQUAL)
    return CUDA_ERROR_INVALID_VALUE;
  ctx->cache_config = config;
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetCacheConfig(CUfunc_cache *pconfig) {
  FAKE_API(cuCtxGetCacheConfig);
  if (!pconfig)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  *pconfig = ctx->cache_config;
  return CUDA_SUCCESS;
}

// Hopper has no configurable bank size: setting is accepted and ignored, as the driver does.
CUresult fake_cuCtxSetSharedMemConfig(CUsharedconfig config) {
  FAKE_API(cuCtxSetSharedMemConfig);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (unsigned(config) > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetSharedMemConfig(CUsharedconfig *pConfig) {
  FAKE_API(cuCtxGetSharedMemConfig);
  if (!pConfig)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  *pConfig = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetApiVersion(CUcontext ctx, unsigned int *version) {
  FAKE_API(cuCtxGetApiVersion);
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr)
    FAKE_CHECK(current_context(&ctx));
  else
    FAKE_CHECK(check_context(ctx));
  *version = context_api_version;
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  FAKE_API(cuCtxEnablePeerAccess);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_context(peerContext));
  if (peerContext->device == ctx->device)
    return CUDA_ERROR_INVALID_DEVICE;
  if (!state().peer_access)
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  if (!ctx->peers.insert(peerContext).second)
    return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxDisablePeerAccess(CUcontext peerContext) {
  FAKE_API(cuCtxDisablePeerAccess);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  FAKE_CHECK(check_context(peerContext));
  if (ctx->peers.erase(peerContext) == 0)
    return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetFlags(unsigned int *flags) {
  FAKE_API(cuCtxGetFlags);
  if (!flags)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  *flags = ctx->flags;
  return CUDA_SUCCESS;
}

// Profiler: nothing to collect; start and stop only need a context.
CUresult fake_cuProfilerStart() {
  FAKE_API(cuProfilerStart);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  state().profiler_running = true;
  return CUDA_SUCCESS;
}

CUresult fake_cuProfilerStop() {
  FAKE_API(cuProfilerStop);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  state().profiler_running = false;
  return CUDA_SUCCESS;
}

} // namespace

void add_context_entries(entry_table &t) {
  FAKE_REGISTER(t, cuDevicePrimaryCtxRetain);
  FAKE_REGISTER(t, cuDevicePrimaryCtxRelease);
  FAKE_REGISTER(t, cuDevicePrimaryCtxGetState);
  FAKE_REGISTER_VERSION(t, cuCtxCreate, 3020, fake_cuCtxCreate_v2);
  FAKE_REGISTER_VERSION(t, cuCtxCreate, 11040, fake_cuCtxCreate_v3);
  FAKE_REGISTER_VERSION(t, cuCtxCreate, 12050, fake_cuCtxCreate);
  FAKE_REGISTER(t, cuCtxDestroy);
  FAKE_REGISTER(t, cuCtxPushCurrent);
  FAKE_REGISTER(t, cuCtxPopCurrent);
  FAKE_REGISTER(t, cuCtxGetCurrent);
  FAKE_REGISTER(t, cuCtxSetCurrent);
  FAKE_REGISTER_VERSION(t, cuCtxGetDevice, 2000, fake_cuCtxGetDevice_v1);
  FAKE_REGISTER_VERSION(t, cuCtxGetDevice, 13000, fake_cuCtxGetDevice);
  FAKE_REGISTER_VERSION(t, cuCtxSynchronize, 2000, fake_cuCtxSynchronize_v1);
  FAKE_REGISTER_VERSION(t, cuCtxSynchronize, 13000, fake_cuCtxSynchronize);
  FAKE_REGISTER(t, cuCtxSetLimit);
  FAKE_REGISTER(t, cuCtxGetLimit);
  FAKE_REGISTER(t, cuCtxSetCacheConfig);
  FAKE_REGISTER(t, cuCtxGetCacheConfig);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" // deprecated, still in the table
  FAKE_REGISTER(t, cuCtxSetSharedMemConfig);
  FAKE_REGISTER(t, cuCtxGetSharedMemConfig);
#pragma GCC diagnostic pop
  FAKE_REGISTER(t, cuCtxGetApiVersion);
  FAKE_REGISTER(t, cuCtxEnablePeerAccess);
  FAKE_REGISTER(t, cuCtxDisablePeerAccess);
  FAKE_REGISTER(t, cuCtxGetFlags);
  FAKE_REGISTER(t, cuProfilerStart);
  FAKE_REGISTER(t, cuProfilerStop);
}

} // namespace fake
