// Stream-ordered allocation (cuMemAllocAsync / cuMemFreeAsync) and memory pools. Freed memory
// goes back at once; each pool only counts what a real one would keep reserved until trimmed.
#include "fake_state.hpp"

#include <algorithm>

namespace fake {
namespace {

size_t round_up(size_t n, size_t align) { return (n + align - 1) / align * align; }

// Gives pool memory back to the pool's cache (a real pool keeps it reserved until trimmed).
void return_to_pool(allocation &a) {
  if (a.pool) {
    a.pool->used -= a.pool_bytes;
    if (a.pool->alive) {
      a.pool->cached += a.pool_bytes;
      a.pool->reserved_high = std::max(a.pool->reserved_high, a.pool->reserved());
    }
  }
}

// Pools are checked like handles; a destroyed one is undefined behaviour.
bool valid_pool(CUmemoryPool pool) {
  return check_handle(state().pools, pool, "memory pool", CUDA_ERROR_INVALID_VALUE) == CUDA_SUCCESS;
}

// Managed pools hand out managed memory (host-accessible), the others device memory.
CUresult allocate_from_pool(CUmemoryPool handle, size_t bytes, CUdeviceptr *dptr) {
  if (bytes == 0) { // allowed, and gives a null pointer
    *dptr = 0;
    return CUDA_SUCCESS;
  }
  memory_pool &pool = handle->pool;
  size_t charged = round_up(bytes, device_alignment);
  size_t reused = std::min(pool.cached, charged);
  pool.cached -= reused;
  if (pool.managed) {
    auto backing = allocate_host(bytes);
    if (!backing) {
      pool.cached += reused;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    allocation m;
    m.base = reinterpret_cast<CUdeviceptr>(backing.get());
    m.size = bytes;
    m.backing = std::move(backing);
    m.kind = alloc_kind::managed;
    m.device = pool.device;
    m.flags = CU_MEM_ATTACH_GLOBAL;
    *dptr = add_allocation(std::move(m)).base;
  } else {
    CUresult r = allocate_device(pool.device, bytes, alloc_kind::async, nullptr, dptr);
    if (r != CUDA_SUCCESS) {
      pool.cached += reused;
      return r;
    }
  }
  allocation *a = find_allocation(*dptr);
  a->pool = &pool;
  a->pool_bytes = charged;
  pool.used += charged;
  pool.used_high = std::max(pool.used_high, pool.used);
  pool.reserved_high = std::max(pool.reserved_high, pool.reserved());
  return CUDA_SUCCESS;
}

CUresult fake_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  FAKE_API(cuMemAllocAsync);
  if (!dptr)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  return allocate_from_pool(state().default_pools[ctx->device], bytesize, dptr);
}

CUresult fake_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  FAKE_API(cuMemAllocFromPoolAsync);
  if (!dptr || !valid_pool(pool))
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  return allocate_from_pool(pool, bytesize, dptr);
}

CUresult fake_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  FAKE_API(cuMemFreeAsync);
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  if (dptr == 0)
    return CUDA_SUCCESS; // what a 0-byte stream-ordered allocation gave
  auto &all = state().allocations;
  auto it = all.find(dptr);
  if (it == all.end())
    return CUDA_ERROR_INVALID_VALUE;
  alloc_kind k = it->second.kind;
  bool pooled_managed = k == alloc_kind::managed && it->second.pool;
  if (k != alloc_kind::async && k != alloc_kind::device && !pooled_managed)
    return CUDA_ERROR_INVALID_VALUE;
  return_to_pool(it->second);
  remove_allocation(dptr);
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
  FAKE_API(cuDeviceGetDefaultMemPool);
  if (!pool_out)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  *pool_out = state().default_pools[dev];
  return CUDA_SUCCESS;
}

CUresult fake_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
  FAKE_API(cuMemPoolCreate);
  if (!pool || !poolProps)
    return CUDA_ERROR_INVALID_VALUE;
  if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED &&
      poolProps->allocType != CU_MEM_ALLOCATION_TYPE_MANAGED)
    return CUDA_ERROR_INVALID_VALUE;
  if (poolProps->location.type == CU_MEM_LOCATION_TYPE_HOST ||
      poolProps->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      !valid_device(poolProps->location.id))
    return CUDA_ERROR_INVALID_VALUE;
  if (poolProps->handleTypes & ~unsigned(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_NOT_SUPPORTED;
  auto *p = new CUmemPoolHandle_st;
  p->pool.device = poolProps->location.id;
  p->pool.managed = poolProps->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED;
  state().pools.insert(p);
  *pool = p;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemPoolDestroy(CUmemoryPool pool) {
  FAKE_API(cuMemPoolDestroy);
  if (!valid_pool(pool) || pool->pool.is_default)
    return CUDA_ERROR_INVALID_VALUE;
  // Outstanding allocations stay usable until freed, as the driver documents.
  pool->pool.alive = false;
  pool->pool.cached = 0;
  state().pools.erase(pool);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  FAKE_API(cuMemPoolSetAttribute);
  if (!valid_pool(pool) || !value)
    return CUDA_ERROR_INVALID_VALUE;
  memory_pool &p = pool->pool;
  auto as_int = [&] { return *static_cast<int *>(value); };
  auto as_u64 = [&] { return *static_cast<cuuint64_t *>(value); };
  switch (attr) {
  case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    p.reuse_follow_event = as_int();
    return CUDA_SUCCESS;
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    p.reuse_opportunistic = as_int();
    return CUDA_SUCCESS;
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
    p.reuse_internal = as_int();
    return CUDA_SUCCESS;
  case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
    p.release_threshold = as_u64();
    return CUDA_SUCCESS;
  case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    if (as_u64() != 0)
      return CUDA_ERROR_INVALID_VALUE;
    p.reserved_high = p.reserved();
    return CUDA_SUCCESS;
  case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
    if (as_u64() != 0)
      return CUDA_ERROR_INVALID_VALUE;
    p.used_high = p.used;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult fake_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  FAKE_API(cuMemPoolGetAttribute);
  if (!valid_pool(pool) || !value)
    return CUDA_ERROR_INVALID_VALUE;
  const memory_pool &p = pool->pool;
  auto set_int = [&](int v) { *static_cast<int *>(value) = v; };
  auto set_u64 = [&](cuuint64_t v) { *static_cast<cuuint64_t *>(value) = v; };
  switch (attr) {
  case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    set_int(p.reuse_follow_event);
    break;
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    set_int(p.reuse_opportunistic);
    break;
  case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
    set_int(p.reuse_internal);
    break;
  case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
    set_u64(p.release_threshold);
    break;
  case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    set_u64(p.reserved());
    break;
  case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    set_u64(std::max(p.reserved_high, p.reserved()));
    break;
  case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
    set_u64(p.used);
    break;
  case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
    set_u64(p.used_high);
    break;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult fake_cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  FAKE_API(cuMemPoolTrimTo);
  if (!valid_pool(pool))
    return CUDA_ERROR_INVALID_VALUE;
  memory_pool &p = pool->pool;
  size_t keep = std::max(minBytesToKeep, p.used);
  if (p.reserved() > keep)
    p.cached = keep - p.used;
  return CUDA_SUCCESS;
}

} // namespace

void add_memory_pool_entries(entry_table &t) {
  FAKE_REGISTER(t, cuMemAllocAsync);
  FAKE_REGISTER(t, cuMemFreeAsync);
  FAKE_REGISTER(t, cuMemAllocFromPoolAsync);
  FAKE_REGISTER(t, cuDeviceGetDefaultMemPool);
  FAKE_REGISTER(t, cuMemPoolCreate);
  FAKE_REGISTER(t, cuMemPoolDestroy);
  FAKE_REGISTER(t, cuMemPoolSetAttribute);
  FAKE_REGISTER(t, cuMemPoolGetAttribute);
  FAKE_REGISTER(t, cuMemPoolTrimTo);
}

} // namespace fake
