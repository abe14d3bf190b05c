// Device, managed, pinned-host and registered memory; IPC memory handles; pointer attributes.
#include "fake_state.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace fake {
namespace {

size_t round_up(size_t n, size_t align) { return (n + align - 1) / align * align; }

bool is_device_kind(alloc_kind k) {
  return k == alloc_kind::device || k == alloc_kind::async || k == alloc_kind::module_global ||
         k == alloc_kind::ipc_mapping;
}

// Device memory ------------------------------------------------------------------------------

CUresult fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
  FAKE_API(cuMemAlloc);
  if (!dptr)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (bytesize == 0)
    return CUDA_ERROR_INVALID_VALUE;
  return allocate_device(ctx->device, bytesize, alloc_kind::device, ctx, dptr);
}

CUresult fake_cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                              unsigned int ElementSizeBytes) {
  FAKE_API(cuMemAllocPitch);
  if (!dptr || !pPitch)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
    return CUDA_ERROR_INVALID_VALUE;
  if (WidthInBytes == 0 || Height == 0)
    return CUDA_ERROR_INVALID_VALUE;
  size_t pitch = round_up(WidthInBytes, pitch_alignment);
  if (pitch > size_t(2147483647))
    return CUDA_ERROR_INVALID_VALUE;
  if (Height > device_total_memory / pitch)
    return CUDA_ERROR_OUT_OF_MEMORY;
  FAKE_CHECK(allocate_device(ctx->device, pitch * Height, alloc_kind::device, ctx, dptr));
  *pPitch = pitch;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemFree(CUdeviceptr dptr) {
  FAKE_API(cuMemFree);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (dptr == 0)
    return CUDA_SUCCESS; // like free(NULL)
  auto &all = state().allocations;
  auto it = all.find(dptr);
  if (it == all.end())
    return CUDA_ERROR_INVALID_VALUE;
  alloc_kind k = it->second.kind;
  if (k != alloc_kind::device && k != alloc_kind::async && k != alloc_kind::managed)
    return CUDA_ERROR_INVALID_VALUE;
  if (it->second.pool) {
    // cuMemFree of pool memory frees it for good (no stream to order the reuse on).
    it->second.pool->used -= it->second.pool_bytes;
  }
  remove_allocation(dptr);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemGetInfo(size_t *free, size_t *total) {
  FAKE_API(cuMemGetInfo);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  size_t used = state().device_used[ctx->device] + pool_cache_bytes(ctx->device);
  if (total)
    *total = device_total_memory;
  if (free)
    *free = device_total_memory - std::min(used, device_total_memory);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
  FAKE_API(cuMemGetAddressRange);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  allocation *a = find_allocation(dptr);
  if (!a)
    return CUDA_ERROR_NOT_FOUND;
  if (pbase)
    *pbase = a->base;
  if (psize)
    *psize = a->size;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  FAKE_API(cuMemAllocManaged);
  if (!dptr)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
    return CUDA_ERROR_INVALID_VALUE;
  auto backing = allocate_host(bytesize);
  if (!backing)
    return CUDA_ERROR_OUT_OF_MEMORY;
  allocation a;
  a.base = reinterpret_cast<CUdeviceptr>(backing.get());
  a.size = bytesize;
  a.backing = std::move(backing);
  a.kind = alloc_kind::managed;
  a.ctx = ctx;
  a.device = ctx->device;
  a.flags = flags;
  *dptr = add_allocation(std::move(a)).base;
  return CUDA_SUCCESS;
}

// Pinned and registered host memory ------------------------------------------------------------

CUresult fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
  FAKE_API(cuMemHostAlloc);
  if (!pp)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  constexpr unsigned known =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (Flags & ~known)
    return CUDA_ERROR_INVALID_VALUE;
  if (bytesize == 0) { // allowed, and gives NULL
    *pp = nullptr;
    return CUDA_SUCCESS;
  }
  auto backing = allocate_host(bytesize);
  if (!backing)
    return CUDA_ERROR_OUT_OF_MEMORY;
  allocation a;
  a.base = reinterpret_cast<CUdeviceptr>(backing.get());
  a.size = bytesize;
  a.backing = std::move(backing);
  a.kind = alloc_kind::host;
  a.ctx = ctx;
  a.device = ctx->device;
  a.flags = Flags | CU_MEMHOSTALLOC_DEVICEMAP; // unified addressing maps every allocation
  *pp = reinterpret_cast<void *>(add_allocation(std::move(a)).base);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemFreeHost(void *p) {
  FAKE_API(cuMemFreeHost);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (p == nullptr)
    return CUDA_SUCCESS; // what a 0-byte cuMemHostAlloc gave
  auto &all = state().allocations;
  auto it = all.find(reinterpret_cast<CUdeviceptr>(p));
  if (it == all.end() || it->second.kind != alloc_kind::host)
    return CUDA_ERROR_INVALID_VALUE;
  remove_allocation(it->first);
  return CUDA_SUCCESS;
}

// The pinned (allocated or registered) host allocation containing p, or nullptr.
allocation *pinned_allocation(const void *p) {
  allocation *a = find_allocation(reinterpret_cast<CUdeviceptr>(p));
  if (a && (a->kind == alloc_kind::host || a->kind == alloc_kind::registered))
    return a;
  return nullptr;
}

CUresult fake_cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags) {
  FAKE_API(cuMemHostGetDevicePointer);
  if (!pdptr)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (Flags != 0 || !pinned_allocation(p))
    return CUDA_ERROR_INVALID_VALUE;
  *pdptr = reinterpret_cast<CUdeviceptr>(p); // unified addressing: the same address
  return CUDA_SUCCESS;
}

CUresult fake_cuMemHostGetFlags(unsigned int *pFlags, void *p) {
  FAKE_API(cuMemHostGetFlags);
  if (!pFlags)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  allocation *a = pinned_allocation(p);
  if (!a)
    return CUDA_ERROR_INVALID_VALUE;
  *pFlags = a->kind == alloc_kind::host ? a->flags : a->flags | CU_MEMHOSTALLOC_DEVICEMAP;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags) {
  FAKE_API(cuMemHostRegister);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  constexpr unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                             CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
  if (!p || bytesize == 0 || (Flags & ~known))
    return CUDA_ERROR_INVALID_VALUE;
  if (Flags & CU_MEMHOSTREGISTER_IOMEMORY)
    return CUDA_ERROR_INVALID_VALUE; // no I/O memory here
  auto start = reinterpret_cast<CUdeviceptr>(p);
  if (in_device_reservation(start))
    return CUDA_ERROR_INVALID_VALUE;
  // Overlap with any tracked range (pinned, registered, managed) is refused.
  auto &all = state().allocations;
  auto it = all.lower_bound(start + bytesize);
  if (it != all.begin()) {
    --it;
    if (it->second.base + it->second.size > start)
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  allocation a;
  a.base = start;
  a.size = bytesize;
  a.backing =
      std::shared_ptr<unsigned char>(static_cast<unsigned char *>(p), [](unsigned char *) {});
  a.kind = alloc_kind::registered;
  a.ctx = ctx;
  a.device = ctx->device;
  a.flags = Flags;
  add_allocation(std::move(a));
  return CUDA_SUCCESS;
}

CUresult fake_cuMemHostUnregister(void *p) {
  FAKE_API(cuMemHostUnregister);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  auto &all = state().allocations;
  auto it = all.find(reinterpret_cast<CUdeviceptr>(p));
  if (it == all.end() || it->second.kind != alloc_kind::registered)
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  remove_allocation(it->first);
  return CUDA_SUCCESS;
}

// IPC memory handles (opened within this process) ---------------------------------------------

constexpr char ipc_mem_magic[16] = "fakecuda-ipcmem";

struct ipc_mem_payload {
  char magic[16];
  long long pid;
  unsigned long long id;
  CUdeviceptr base;
  unsigned long long size;
};
static_assert(sizeof(ipc_mem_payload) <= sizeof(CUipcMemHandle));

CUresult fake_cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr) {
  FAKE_API(cuIpcGetMemHandle);
  if (!pHandle)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  auto &all = state().allocations;
  auto it = all.find(dptr);
  if (it == all.end() || it->second.kind != alloc_kind::device)
    return CUDA_ERROR_INVALID_VALUE;
  ipc_mem_payload payload{};
  std::memcpy(payload.magic, ipc_mem_magic, sizeof payload.magic);
  payload.pid = getpid();
  payload.id = it->second.id;
  payload.base = it->second.base;
  payload.size = it->second.size;
  std::memset(pHandle, 0, sizeof *pHandle);
  std::memcpy(pHandle->reserved, &payload, sizeof payload);
  return CUDA_SUCCESS;
}

CUresult fake_cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
  FAKE_API(cuIpcOpenMemHandle);
  if (!pdptr)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (Flags & ~unsigned(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
    return CUDA_ERROR_INVALID_VALUE;
  ipc_mem_payload payload;
  std::memcpy(&payload, handle.reserved, sizeof payload);
  if (std::memcmp(payload.magic, ipc_mem_magic, sizeof payload.magic) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  // The driver refuses handles of the calling process; the fake can open nothing else (its
  // state is per process) unless a test asks it to (fake_cuda_set_ipc_in_process).
  if (payload.pid == getpid() && !state().ipc_in_process)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (payload.pid != getpid())
    return CUDA_ERROR_INVALID_HANDLE;
  auto &all = state().allocations;
  // Already opened here: the same address, one more reference.
  for (auto &[base, a] : all) {
    if (a.kind == alloc_kind::ipc_mapping && a.ipc_source == payload.id && a.ctx == ctx) {
      ++a.ipc_open_count;
      *pdptr = base;
      return CUDA_SUCCESS;
    }
  }
  auto it = all.find(payload.base);
  if (it == all.end() || it->second.id != payload.id)
    return CUDA_ERROR_INVALID_HANDLE;
  CUdeviceptr base = reserve_device_range(it->second.device, it->second.size);
  if (!base)
    return CUDA_ERROR_MAP_FAILED;
  allocation m;
  m.base = base;
  m.size = it->second.size;
  m.backing = it->second.backing;
  m.kind = alloc_kind::ipc_mapping;
  m.ctx = ctx;
  m.device = it->second.device;
  m.ipc_open_count = 1;
  m.ipc_source = payload.id;
  add_allocation(std::move(m));
  *pdptr = base;
  return CUDA_SUCCESS;
}

CUresult fake_cuIpcCloseMemHandle(CUdeviceptr dptr) {
  FAKE_API(cuIpcCloseMemHandle);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  auto &all = state().allocations;
  auto it = all.find(dptr);
  if (it == all.end() || it->second.kind != alloc_kind::ipc_mapping)
    return CUDA_ERROR_INVALID_VALUE;
  if (--it->second.ipc_open_count == 0)
    remove_allocation(dptr);
  return CUDA_SUCCESS;
}

// Pointer attributes ---------------------------------------------------------------------------

template <class T> void put(void *data, T value) { std::memcpy(data, &value, sizeof value); }

CUresult fake_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  FAKE_API(cuPointerGetAttribute);
  if (!data)
    return CUDA_ERROR_INVALID_VALUE;
  allocation *a = find_allocation(ptr);
  if (!a)
    return CUDA_ERROR_INVALID_VALUE;
  bool host_side = a->kind == alloc_kind::host || a->kind == alloc_kind::registered;
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    put(data, a->ctx); // null for pool memory, which belongs to no context
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    put(data, static_cast<unsigned>(host_side ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE));
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    put(data, ptr);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    if (is_device_kind(a->kind))
      return CUDA_ERROR_INVALID_VALUE;
    put(data, reinterpret_cast<void *>(ptr));
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    put(data, false);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    put(data, a->id);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    put(data, a->kind == alloc_kind::managed);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    put(data, a->device);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    put(data, a->kind == alloc_kind::device);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    put(data, a->base);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    put(data, a->size);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_MAPPED:
    put(data, true);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    put(data, 0ull);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    put(data, false);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    put(data, static_cast<int>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    if (!a->pool)
      return CUDA_ERROR_INVALID_VALUE;
    for (CUmemoryPool p : state().pools)
      if (&p->pool == a->pool) {
        put(data, p);
        return CUDA_SUCCESS;
      }
    return CUDA_ERROR_INVALID_VALUE;
  case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    put(data, a->size);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    put(data, reinterpret_cast<void *>(a->base));
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
    put(data, a->id);
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

} // namespace

void add_memory_entries(entry_table &t) {
  FAKE_REGISTER(t, cuMemAlloc);
  FAKE_REGISTER(t, cuMemFree);
  FAKE_REGISTER(t, cuMemAllocPitch);
  FAKE_REGISTER(t, cuMemGetInfo);
  FAKE_REGISTER(t, cuMemGetAddressRange);
  FAKE_REGISTER(t, cuMemAllocManaged);
  FAKE_REGISTER(t, cuMemHostAlloc);
  FAKE_REGISTER(t, cuMemFreeHost);
  FAKE_REGISTER(t, cuMemHostGetDevicePointer);
  FAKE_REGISTER(t, cuMemHostGetFlags);
  FAKE_REGISTER(t, cuMemHostRegister);
  FAKE_REGISTER(t, cuMemHostUnregister);
  FAKE_REGISTER(t, cuIpcGetMemHandle);
  FAKE_REGISTER(t, cuIpcOpenMemHandle);
  FAKE_REGISTER(t, cuIpcCloseMemHandle);
  FAKE_REGISTER(t, cuPointerGetAttribute);
}

} // namespace fake
