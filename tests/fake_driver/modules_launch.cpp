// Modules (load PTX / cubin / fatbin, functions, globals), kernel launches (checked like the
// driver, recorded, not executed), function attributes and occupancy.
#include "module_image.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fake {

// Loads `image` into a new module of the current context (shared with linker.cpp's callers).
CUresult load_module(CUmodule *module, const void *image, size_t size, const jit_options *jit);

namespace {

constexpr int default_shared_per_block = 49152;
constexpr int shared_optin = 232448;
constexpr int shared_per_sm = 233472;
constexpr int reserved_shared_per_block = 1024;
constexpr int multiprocessors = 132;

int max_threads(const CUfunc_st *f) { return f->info.maxntid ? int(f->info.maxntid) : 1024; }

CUresult fake_cuModuleLoadData(CUmodule *module, const void *image) {
  FAKE_API(cuModuleLoadData);
  return load_module(module, image, 0, nullptr);
}

CUresult fake_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                 CUjit_option *options, void **optionValues) {
  FAKE_API(cuModuleLoadDataEx);
  jit_options jit;
  FAKE_CHECK(jit.parse(numOptions, options, optionValues));
  return load_module(module, image, 0, &jit);
}

CUresult fake_cuModuleLoad(CUmodule *module, const char *fname) {
  FAKE_API(cuModuleLoad);
  if (!module || !fname)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  std::ifstream in(fname, std::ios::binary);
  if (!in)
    return CUDA_ERROR_FILE_NOT_FOUND;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string data = bytes.str();
  if (data.empty())
    return CUDA_ERROR_INVALID_IMAGE;
  return load_module(module, data.c_str(), data.size(), nullptr);
}

CUresult fake_cuModuleUnload(CUmodule hmod) {
  FAKE_API(cuModuleUnload);
  FAKE_CHECK(check_handle(state().modules, hmod, "module"));
  auto &s = state();
  for (auto &[name, base] : hmod->globals)
    remove_allocation(base);
  for (auto &[name, f] : hmod->functions)
    s.functions.erase(f);
  hmod->alive = false;
  s.modules.erase(hmod);
  return CUDA_SUCCESS;
}

CUresult fake_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  FAKE_API(cuModuleGetFunction);
  if (!hfunc || !name)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_handle(state().modules, hmod, "module"));
  auto it = hmod->functions.find(name);
  if (it == hmod->functions.end())
    return CUDA_ERROR_NOT_FOUND;
  *hfunc = it->second;
  return CUDA_SUCCESS;
}

CUresult fake_cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name) {
  FAKE_API(cuModuleGetGlobal);
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_handle(state().modules, hmod, "module"));
  auto it = hmod->globals.find(name);
  if (it == hmod->globals.end())
    return CUDA_ERROR_NOT_FOUND;
  if (dptr)
    *dptr = it->second;
  if (bytes)
    *bytes = find_allocation(it->second)->size;
  return CUDA_SUCCESS;
}

// Launch ---------------------------------------------------------------------------------------

// The parameter buffer of a launch, from `extra` (BUFFER_POINTER / BUFFER_SIZE) or from
// kernelParams using the kernel's layout.
CUresult collect_params(const CUfunc_st *f, void **kernelParams, void **extra,
                        std::vector<unsigned char> &out) {
  const kernel_info &k = f->info;
  if (kernelParams && extra)
    return CUDA_ERROR_INVALID_VALUE;
  if (extra) {
    const void *buffer = nullptr;
    const size_t *size = nullptr;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buffer = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        size = static_cast<const size_t *>(extra[i + 1]);
      else
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!buffer || !size)
      return k.params.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    // The driver takes a shorter buffer (the rest of the parameters is undefined; recorded as
    // zeros), refuses an empty one and one larger than the parameter space.
    if (*size == 0 && !k.params.empty())
      return CUDA_ERROR_INVALID_VALUE;
    if (*size > k.param_bytes)
      return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    auto p = static_cast<const unsigned char *>(buffer);
    out.assign(k.param_bytes, 0);
    std::memcpy(out.data(), p, *size);
    return CUDA_SUCCESS;
  }
  if (k.params.empty())
    return CUDA_SUCCESS;
  if (!kernelParams)
    return CUDA_ERROR_INVALID_VALUE;
  out.assign(k.param_bytes, 0);
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (!kernelParams[i])
      return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(out.data() + k.params[i].offset, kernelParams[i], k.params[i].size);
  }
  return CUDA_SUCCESS;
}

} // namespace

CUresult check_launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                      unsigned shared_bytes, void **kernelParams, void **extra, launch_record &r) {
  FAKE_CHECK(check_handle(state().functions, f, "function"));
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || grid[0] > 2147483647u || grid[1] > 65535 ||
      grid[2] > 65535)
    return CUDA_ERROR_INVALID_VALUE;
  if (block[0] == 0 || block[1] == 0 || block[2] == 0 || block[0] > 1024 || block[1] > 1024 ||
      block[2] > 64)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned long long threads = 1ull * block[0] * block[1] * block[2];
  if (threads > unsigned(max_threads(f)))
    return CUDA_ERROR_INVALID_VALUE;
  const unsigned *req = f->info.reqntid;
  if (req[0] && (req[0] != block[0] || req[1] != block[1] || req[2] != block[2]))
    return CUDA_ERROR_INVALID_VALUE;
  if (shared_bytes > unsigned(f->max_dynamic_shared))
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(collect_params(f, kernelParams, extra, r.params));
  r.function = f->info.name;
  std::copy(grid, grid + 3, r.grid);
  std::copy(block, block + 3, r.block);
  r.shared_bytes = shared_bytes;
  return CUDA_SUCCESS;
}

namespace {

CUresult fake_cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra) {
  FAKE_API(cuLaunchKernel);
  CUcontext ctx, stream_ctx;
  FAKE_CHECK(current_context(&ctx));
  FAKE_CHECK(check_handle(state().functions, f, "function"));
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  if (capturing(hStream)) { // a kernel node, checked as a launch
    if (f->module->ctx != ctx || hStream->ctx != ctx)
      return CUDA_ERROR_INVALID_HANDLE;
    launch_record r;
    FAKE_CHECK(check_launch(f, grid, block, sharedMemBytes, kernelParams, extra, r));
    graph_node n;
    n.type = CU_GRAPH_NODE_TYPE_KERNEL;
    n.function = f;
    std::copy(grid, grid + 3, n.grid);
    std::copy(block, block + 3, n.block);
    n.shared_bytes = sharedMemBytes;
    n.params = std::move(r.params);
    return capture_node(hStream, std::move(n));
  }
  FAKE_CHECK(stream_context(hStream, &stream_ctx));
  if (f->module->ctx != ctx || stream_ctx != ctx)
    return CUDA_ERROR_INVALID_HANDLE;
  launch_record r;
  FAKE_CHECK(check_launch(f, grid, block, sharedMemBytes, kernelParams, extra, r));
  r.stream = hStream;
  record_launch(std::move(r));
  return CUDA_SUCCESS;
}

// Function attributes --------------------------------------------------------------------------

CUresult fake_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
  FAKE_API(cuFuncGetAttribute);
  if (!pi)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_handle(state().functions, hfunc, "function"));
  const CUfunc_st &f = *hfunc;
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *pi = max_threads(&f);
    break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    *pi = int(f.info.static_shared);
    break;
  case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    *pi = int(f.module->const_bytes);
    break;
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    *pi = int(f.info.local_bytes);
    break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS:
    *pi = f.info.num_regs;
    break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    *pi = f.module->ptx_version ? f.module->ptx_version : 90;
    break;
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
    *pi = f.module->binary_version;
    break;
  case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    *pi = 0;
    break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *pi = f.max_dynamic_shared;
    break;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    *pi = f.carveout;
    break;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    *pi = 0;
    break;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    *pi = f.cluster_dims[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH];
    break;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    *pi = f.non_portable_cluster;
    break;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    *pi = f.cluster_policy;
    break;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult fake_cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  FAKE_API(cuFuncSetAttribute);
  FAKE_CHECK(check_handle(state().functions, hfunc, "function"));
  CUfunc_st &f = *hfunc;
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    if (value < 0 || size_t(value) + f.info.static_shared > size_t(shared_optin))
      return CUDA_ERROR_INVALID_VALUE;
    f.max_dynamic_shared = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    if (value < -1 || value > 100)
      return CUDA_ERROR_INVALID_VALUE;
    f.carveout = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    if (value < 0 || value > 16)
      return CUDA_ERROR_INVALID_VALUE;
    f.cluster_dims[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    if (value != 0 && value != 1)
      return CUDA_ERROR_INVALID_VALUE;
    f.non_portable_cluster = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    if (value < 0 || value > 2)
      return CUDA_ERROR_INVALID_VALUE;
    f.cluster_policy = value;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult fake_cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  FAKE_API(cuFuncSetCacheConfig);
  FAKE_CHECK(check_handle(state().functions, hfunc, "function"));
  if (unsigned(config) > CU_FUNC_CACHE_PREFER_EQUAL)
    return CUDA_ERROR_INVALID_VALUE;
  hfunc->cache_config = config;
  return CUDA_SUCCESS;
}

CUresult fake_cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                 size_t *paramSize) {
  FAKE_API(cuFuncGetParamInfo);
  FAKE_CHECK(check_handle(state().functions, func, "function"));
  if (paramIndex >= func->info.params.size())
    return CUDA_ERROR_INVALID_VALUE;
  if (paramOffset)
    *paramOffset = func->info.params[paramIndex].offset;
  if (paramSize)
    *paramSize = func->info.params[paramIndex].size;
  return CUDA_SUCCESS;
}

CUresult fake_cuFuncGetName(const char **name, CUfunction hfunc) {
  FAKE_API(cuFuncGetName);
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_handle(state().functions, hfunc, "function"));
  *name = hfunc->info.name.c_str();
  return CUDA_SUCCESS;
}

// Occupancy: the usual limits of an SM (threads, blocks, registers, shared memory).
int blocks_per_sm(const CUfunc_st *f, int block_size, size_t dynamic_shared) {
  if (block_size <= 0 || block_size > max_threads(f))
    return 0;
  if (dynamic_shared > size_t(f->max_dynamic_shared))
    return 0; // could not be launched
  size_t shared = f->info.static_shared + dynamic_shared;
  if (shared > size_t(shared_optin))
    return 0;
  int warps = (block_size + 31) / 32;
  int by_threads = 64 / warps;
  int regs_per_warp = (f->info.num_regs * 32 + 255) / 256 * 256;
  int by_regs = regs_per_warp ? 65536 / (regs_per_warp * warps) : 32;
  int by_shared = shared ? int(shared_per_sm / (shared + reserved_shared_per_block)) : 32;
  return std::max(0, std::min({32, by_threads, by_regs, by_shared}));
}

CUresult fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                          int blockSize, size_t dynamicSMemSize) {
  FAKE_API(cuOccupancyMaxActiveBlocksPerMultiprocessor);
  if (!numBlocks)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_handle(state().functions, func, "function"));
  if (blockSize <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  *numBlocks = blocks_per_sm(func, blockSize, dynamicSMemSize);
  return CUDA_SUCCESS;
}

CUresult fake_cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                               CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                               size_t dynamicSMemSize, int blockSizeLimit) {
  FAKE_API(cuOccupancyMaxPotentialBlockSize);
  if (!minGridSize || !blockSize || blockSizeLimit < 0)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_handle(state().functions, func, "function"));
  int limit = max_threads(func);
  if (blockSizeLimit > 0)
    limit = std::min(limit, blockSizeLimit);
  int best_size = 0, best_blocks = 0, best_threads = 0;
  for (int size = (limit + 31) / 32 * 32; size > 0; size -= 32) {
    int candidate = std::min(size, limit);
    size_t shared =
        blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(candidate) : dynamicSMemSize;
    int blocks = blocks_per_sm(func, candidate, shared);
    if (blocks * candidate > best_threads) {
      best_threads = blocks * candidate;
      best_size = candidate;
      best_blocks = blocks;
    }
  }
  *blockSize = best_size;
  *minGridSize = best_blocks * multiprocessors;
  return CUDA_SUCCESS;
}

} // namespace

int occupancy_blocks_per_sm(CUfunction f, int block_size, size_t dynamic_shared) {
  return blocks_per_sm(f, block_size, dynamic_shared);
}

CUresult load_module(CUmodule *module, const void *image, size_t size, const jit_options *jit) {
  if (!module || !image)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  image_info info;
  load_result r = read_image(image, size, info);
  if (jit)
    jit->write_logs(r.log, "");
  if (r.code != CUDA_SUCCESS)
    return r.code;
  auto &s = state();
  auto *m = new CUmod_st;
  m->ctx = ctx;
  m->ptx_version = info.ptx_version;
  m->binary_version = info.binary_version;
  for (auto &k : info.kernels) {
    if (m->functions.count(k.name))
      continue;
    auto *f = new CUfunc_st;
    f->module = m;
    f->max_dynamic_shared =
        int(default_shared_per_block - std::min<size_t>(k.static_shared, default_shared_per_block));
    f->info = std::move(k);
    m->functions[f->info.name] = f;
    s.functions.insert(f);
  }
  for (auto &g : info.globals) {
    if (m->globals.count(g.name))
      continue;
    CUdeviceptr base = reserve_device_range(ctx->device, g.size);
    auto backing = allocate_host(g.size);
    if (!base || !backing)
      return CUDA_ERROR_OUT_OF_MEMORY;
    std::memcpy(backing.get(), g.init.data(), std::min(g.init.size(), g.size));
    allocation a;
    a.base = base;
    a.size = std::max<size_t>(g.size, 1);
    a.backing = std::move(backing);
    a.kind = alloc_kind::module_global;
    a.ctx = ctx;
    a.device = ctx->device;
    add_allocation(std::move(a));
    m->globals[g.name] = base;
    if (g.constant)
      m->const_bytes += g.size;
  }
  s.modules.insert(m);
  *module = m;
  return CUDA_SUCCESS;
}

void add_module_launch_entries(entry_table &t) {
  FAKE_REGISTER(t, cuModuleLoad);
  FAKE_REGISTER(t, cuModuleLoadData);
  FAKE_REGISTER(t, cuModuleLoadDataEx);
  FAKE_REGISTER(t, cuModuleUnload);
  FAKE_REGISTER(t, cuModuleGetFunction);
  FAKE_REGISTER(t, cuModuleGetGlobal);
  FAKE_REGISTER(t, cuLaunchKernel);
  FAKE_REGISTER(t, cuFuncGetAttribute);
  FAKE_REGISTER(t, cuFuncSetAttribute);
  FAKE_REGISTER(t, cuFuncSetCacheConfig);
  FAKE_REGISTER_VERSION(t, cuFuncGetParamInfo, 12040, fake_cuFuncGetParamInfo);
  FAKE_REGISTER_VERSION(t, cuFuncGetName, 12030, fake_cuFuncGetName);
  FAKE_REGISTER(t, cuOccupancyMaxActiveBlocksPerMultiprocessor);
  FAKE_REGISTER(t, cuOccupancyMaxPotentialBlockSize);
}

} // namespace fake
