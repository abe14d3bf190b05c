// Copies (1D, peer, 2D, 3D, sync and async) and memsets. Streams run work at once, so the async
// forms behave like the synchronous ones after checking their stream.
#include "fake_state.hpp"

#include <cstring>

namespace fake {
namespace {

constexpr size_t max_pitch = 2147483647;

// 1D copies ------------------------------------------------------------------------------------

CUresult copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (n == 0)
    return CUDA_SUCCESS;
  unsigned char *d, *s;
  FAKE_CHECK(unified_range(dst, n, &d));
  FAKE_CHECK(unified_range(src, n, &s));
  std::memmove(d, s, n);
  return CUDA_SUCCESS;
}

CUresult copy_htod(CUdeviceptr dst, const void *src, size_t n) {
  if (n == 0)
    return CUDA_SUCCESS;
  unsigned char *d;
  FAKE_CHECK(device_range(dst, n, &d));
  FAKE_CHECK(host_range(src, n));
  std::memmove(d, src, n);
  return CUDA_SUCCESS;
}

CUresult copy_dtoh(void *dst, CUdeviceptr src, size_t n) {
  if (n == 0)
    return CUDA_SUCCESS;
  unsigned char *s;
  FAKE_CHECK(device_range(src, n, &s));
  FAKE_CHECK(host_range(dst, n));
  std::memmove(dst, s, n);
  return CUDA_SUCCESS;
}

CUresult copy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (n == 0)
    return CUDA_SUCCESS;
  unsigned char *d, *s;
  FAKE_CHECK(device_range(dst, n, &d));
  FAKE_CHECK(device_range(src, n, &s));
  std::memmove(d, s, n);
  return CUDA_SUCCESS;
}

CUresult copy_peer(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t n) {
  FAKE_CHECK(check_context(dstCtx));
  FAKE_CHECK(check_context(srcCtx));
  return copy_dtod(dst, src, n);
}

#define FAKE_NEEDS_CONTEXT()                                                                       \
  CUcontext ctx_;                                                                                  \
  FAKE_CHECK(current_context(&ctx_))

#define FAKE_NEEDS_STREAM(stream)                                                                  \
  CUcontext ctx_;                                                                                  \
  FAKE_CHECK(stream_context(stream, &ctx_))

// A 1D copy or a fill on a capturing stream becomes a memcpy or memset node of its graph.
graph_node copy_node(CUmemorytype dst_type, void *dst_host, CUdeviceptr dst, CUmemorytype src_type,
                     const void *src_host, CUdeviceptr src, size_t n) {
  graph_node g;
  g.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  g.copy.dstMemoryType = dst_type;
  g.copy.dstHost = dst_host;
  g.copy.dstDevice = dst;
  g.copy.srcMemoryType = src_type;
  g.copy.srcHost = src_host;
  g.copy.srcDevice = src;
  g.copy.WidthInBytes = g.copy.dstPitch = g.copy.srcPitch = n;
  g.copy.Height = g.copy.Depth = 1;
  return g;
}

graph_node fill_node(CUdeviceptr dst, unsigned value, unsigned element, size_t n) {
  graph_node g;
  g.type = CU_GRAPH_NODE_TYPE_MEMSET;
  g.fill.dst = dst;
  g.fill.value = value;
  g.fill.elementSize = element;
  g.fill.width = n;
  g.fill.height = 1;
  g.fill.pitch = n * element;
  return g;
}

CUresult fake_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  FAKE_API(cuMemcpy);
  FAKE_NEEDS_CONTEXT();
  return copy_unified(dst, src, ByteCount);
}

CUresult fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  FAKE_API(cuMemcpyAsync);
  FAKE_NEEDS_STREAM(hStream);
  return copy_unified(dst, src, ByteCount);
}

CUresult fake_cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
  FAKE_API(cuMemcpyHtoD);
  FAKE_NEEDS_CONTEXT();
  return copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult fake_cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  FAKE_API(cuMemcpyDtoH);
  FAKE_NEEDS_CONTEXT();
  return copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult fake_cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  FAKE_API(cuMemcpyDtoD);
  FAKE_NEEDS_CONTEXT();
  return copy_dtod(dstDevice, srcDevice, ByteCount);
}

CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                CUstream hStream) {
  FAKE_API(cuMemcpyHtoDAsync);
  if (capturing(hStream))
    return capture_node(hStream, copy_node(CU_MEMORYTYPE_DEVICE, nullptr, dstDevice,
                                           CU_MEMORYTYPE_HOST, srcHost, 0, ByteCount));
  FAKE_NEEDS_STREAM(hStream);
  return copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult fake_cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                CUstream hStream) {
  FAKE_API(cuMemcpyDtoHAsync);
  if (capturing(hStream))
    return capture_node(hStream, copy_node(CU_MEMORYTYPE_HOST, dstHost, 0, CU_MEMORYTYPE_DEVICE,
                                           nullptr, srcDevice, ByteCount));
  FAKE_NEEDS_STREAM(hStream);
  return copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult fake_cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                CUstream hStream) {
  FAKE_API(cuMemcpyDtoDAsync);
  if (capturing(hStream))
    return capture_node(hStream, copy_node(CU_MEMORYTYPE_DEVICE, nullptr, dstDevice,
                                           CU_MEMORYTYPE_DEVICE, nullptr, srcDevice, ByteCount));
  FAKE_NEEDS_STREAM(hStream);
  return copy_dtod(dstDevice, srcDevice, ByteCount);
}

CUresult fake_cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount) {
  FAKE_API(cuMemcpyPeer);
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

CUresult fake_cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  FAKE_API(cuMemcpyPeerAsync);
  FAKE_NEEDS_STREAM(hStream);
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

// 2D and 3D copies -----------------------------------------------------------------------------

// One side of a structured copy, whatever struct it came from.
struct endpoint {
  CUmemorytype type;
  const void *host;
  CUdeviceptr device;
  CUarray array;
  CUcontext ctx; // peer copies only
  size_t x, y, z, lod, pitch, height;
};

// Base address of the bytes an endpoint touches, after checking they are all addressable.
CUresult resolve(const endpoint &e, size_t width, size_t height, size_t depth,
                 unsigned char **out) {
  if (e.lod != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (e.type == CU_MEMORYTYPE_ARRAY) { // as_array_side set pitch and height from the array
    FAKE_CHECK(check_array(e.array));
    if (e.x + width > e.pitch || e.y + height > e.height || e.z + depth > e.array->slices())
      return CUDA_ERROR_INVALID_VALUE;
    *out = e.array->bytes.data() + (e.z * e.height + e.y) * e.pitch + e.x;
    return CUDA_SUCCESS;
  }
  if (e.type != CU_MEMORYTYPE_HOST && e.type != CU_MEMORYTYPE_DEVICE &&
      e.type != CU_MEMORYTYPE_UNIFIED)
    return CUDA_ERROR_INVALID_VALUE;
  if (e.pitch > max_pitch)
    return CUDA_ERROR_INVALID_VALUE;
  // A single row needs no pitch; several need their rows (offset included) to fit in it.
  if ((height > 1 || depth > 1) && e.x + width > e.pitch)
    return CUDA_ERROR_INVALID_VALUE;
  size_t slice = e.pitch * (depth > 1 ? e.height : height);
  size_t start = e.z * slice + e.y * e.pitch + e.x;
  size_t extent = (depth - 1) * slice + (height - 1) * e.pitch + width;
  if (e.type == CU_MEMORYTYPE_HOST) {
    auto base = static_cast<const unsigned char *>(e.host) + start;
    FAKE_CHECK(host_range(base, extent));
    *out = const_cast<unsigned char *>(base);
    return CUDA_SUCCESS;
  }
  if (e.type == CU_MEMORYTYPE_DEVICE)
    return device_range(e.device + start, extent, out);
  return unified_range(e.device + start, extent, out);
}

// An array side's rows are packed: its pitch and rows per slice are the array's, whatever the
// descriptor says (the driver ignores those fields for arrays).
endpoint as_array_side(endpoint e) {
  if (e.type == CU_MEMORYTYPE_ARRAY && state().arrays.count(e.array)) {
    e.pitch = e.array->row_bytes();
    e.height = e.array->rows();
  }
  return e;
}

CUresult copy_3d(const endpoint &src_in, const endpoint &dst_in, size_t width, size_t height,
                 size_t depth) {
  if (width == 0 || height == 0 || depth == 0)
    return CUDA_SUCCESS;
  const endpoint src = as_array_side(src_in), dst = as_array_side(dst_in);
  unsigned char *s, *d;
  FAKE_CHECK(resolve(src, width, height, depth, &s));
  FAKE_CHECK(resolve(dst, width, height, depth, &d));
  const bool src_slices = depth > 1 || src.type == CU_MEMORYTYPE_ARRAY;
  const bool dst_slices = depth > 1 || dst.type == CU_MEMORYTYPE_ARRAY;
  size_t src_slice = src.pitch * (src_slices ? src.height : height);
  size_t dst_slice = dst.pitch * (dst_slices ? dst.height : height);
  for (size_t z = 0; z < depth; ++z)
    for (size_t y = 0; y < height; ++y)
      std::memmove(d + z * dst_slice + y * dst.pitch, s + z * src_slice + y * src.pitch, width);
  return CUDA_SUCCESS;
}

CUresult copy_2d(const CUDA_MEMCPY2D *p) {
  if (!p)
    return CUDA_ERROR_INVALID_VALUE;
  endpoint src{p->srcMemoryType, p->srcHost, p->srcDevice,
               p->srcArray,      nullptr,    p->srcXInBytes,
               p->srcY,          0,          0,
               p->srcPitch,      0};
  endpoint dst{p->dstMemoryType, p->dstHost, p->dstDevice,
               p->dstArray,      nullptr,    p->dstXInBytes,
               p->dstY,          0,          0,
               p->dstPitch,      0};
  return copy_3d(src, dst, p->WidthInBytes, p->Height, 1);
}

CUresult copy_3d(const CUDA_MEMCPY3D *p) {
  if (!p)
    return CUDA_ERROR_INVALID_VALUE; // reserved0/1 "must be NULL", but are not checked
  endpoint src{p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, nullptr,     p->srcXInBytes,
               p->srcY,          p->srcZ,    p->srcLOD,    p->srcPitch, p->srcHeight};
  endpoint dst{p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, nullptr,     p->dstXInBytes,
               p->dstY,          p->dstZ,    p->dstLOD,    p->dstPitch, p->dstHeight};
  return copy_3d(src, dst, p->WidthInBytes, p->Height, p->Depth);
}

CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER *p) {
  if (!p)
    return CUDA_ERROR_INVALID_VALUE;
  endpoint src{p->srcMemoryType, p->srcHost,     p->srcDevice, p->srcArray,
               p->srcContext,    p->srcXInBytes, p->srcY,      p->srcZ,
               p->srcLOD,        p->srcPitch,    p->srcHeight};
  endpoint dst{p->dstMemoryType, p->dstHost,     p->dstDevice, p->dstArray,
               p->dstContext,    p->dstXInBytes, p->dstY,      p->dstZ,
               p->dstLOD,        p->dstPitch,    p->dstHeight};
  for (const endpoint *e : {&src, &dst})
    if (e->type != CU_MEMORYTYPE_ARRAY)
      FAKE_CHECK(check_context(e->ctx));
  return copy_3d(src, dst, p->WidthInBytes, p->Height, p->Depth);
}

CUresult fake_cuMemcpy2D(const CUDA_MEMCPY2D *pCopy) {
  FAKE_API(cuMemcpy2D);
  FAKE_NEEDS_CONTEXT();
  return copy_2d(pCopy);
}

CUresult fake_cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *pCopy) {
  FAKE_API(cuMemcpy2DUnaligned);
  FAKE_NEEDS_CONTEXT();
  return copy_2d(pCopy);
}

CUresult fake_cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream) {
  FAKE_API(cuMemcpy2DAsync);
  FAKE_NEEDS_STREAM(hStream);
  return copy_2d(pCopy);
}

CUresult fake_cuMemcpy3D(const CUDA_MEMCPY3D *pCopy) {
  FAKE_API(cuMemcpy3D);
  FAKE_NEEDS_CONTEXT();
  return copy_3d(pCopy);
}

CUresult fake_cuMemcpy3DAsync(const CUDA_MEMCPY3D *pCopy, CUstream hStream) {
  FAKE_API(cuMemcpy3DAsync);
  FAKE_NEEDS_STREAM(hStream);
  return copy_3d(pCopy);
}

CUresult fake_cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy) {
  FAKE_API(cuMemcpy3DPeer);
  return copy_3d_peer(pCopy);
}

CUresult fake_cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream) {
  FAKE_API(cuMemcpy3DPeerAsync);
  FAKE_NEEDS_STREAM(hStream);
  return copy_3d_peer(pCopy);
}

// Memsets --------------------------------------------------------------------------------------

// Fills `height` rows of `width` elements of `value` (element size sizeof(T)) `pitch` apart.
template <class T>
CUresult fill(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height) {
  if (width == 0 || height == 0)
    return CUDA_SUCCESS;
  if (dst % sizeof(T) != 0 || pitch % sizeof(T) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  size_t row = width * sizeof(T);
  if (height > 1 && pitch < row)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned char *d;
  FAKE_CHECK(device_range(dst, (height - 1) * pitch + row, &d));
  for (size_t y = 0; y < height; ++y) {
    auto *p = reinterpret_cast<T *>(d + y * pitch);
    for (size_t i = 0; i < width; ++i)
      std::memcpy(p + i, &value, sizeof(T));
  }
  return CUDA_SUCCESS;
}

CUresult fake_cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  FAKE_API(cuMemsetD8);
  FAKE_NEEDS_CONTEXT();
  return fill(dstDevice, N, uc, N, 1);
}

CUresult fake_cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  FAKE_API(cuMemsetD16);
  FAKE_NEEDS_CONTEXT();
  return fill(dstDevice, N * 2, us, N, 1);
}

CUresult fake_cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  FAKE_API(cuMemsetD32);
  FAKE_NEEDS_CONTEXT();
  return fill(dstDevice, N * 4, ui, N, 1);
}

CUresult fake_cuMemsetD2D8(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                           size_t Height) {
  FAKE_API(cuMemsetD2D8);
  FAKE_NEEDS_CONTEXT();
  return fill(dstDevice, dstPitch, uc, Width, Height);
}

CUresult fake_cuMemsetD2D16(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                            size_t Height) {
  FAKE_API(cuMemsetD2D16);
  FAKE_NEEDS_CONTEXT();
  return fill(dstDevice, dstPitch, us, Width, Height);
}

CUresult fake_cuMemsetD2D32(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                            size_t Height) {
  FAKE_API(cuMemsetD2D32);
  FAKE_NEEDS_CONTEXT();
  return fill(dstDevice, dstPitch, ui, Width, Height);
}

CUresult fake_cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  FAKE_API(cuMemsetD8Async);
  if (capturing(hStream))
    return capture_node(hStream, fill_node(dstDevice, uc, 1, N));
  FAKE_NEEDS_STREAM(hStream);
  return fill(dstDevice, N, uc, N, 1);
}

CUresult fake_cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
                               CUstream hStream) {
  FAKE_API(cuMemsetD16Async);
  if (capturing(hStream))
    return capture_node(hStream, fill_node(dstDevice, us, 2, N));
  FAKE_NEEDS_STREAM(hStream);
  return fill(dstDevice, N * 2, us, N, 1);
}

CUresult fake_cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  FAKE_API(cuMemsetD32Async);
  if (capturing(hStream))
    return capture_node(hStream, fill_node(dstDevice, ui, 4, N));
  FAKE_NEEDS_STREAM(hStream);
  return fill(dstDevice, N * 4, ui, N, 1);
}

CUresult fake_cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                size_t Width, size_t Height, CUstream hStream) {
  FAKE_API(cuMemsetD2D8Async);
  FAKE_NEEDS_STREAM(hStream);
  return fill(dstDevice, dstPitch, uc, Width, Height);
}

CUresult fake_cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                 size_t Width, size_t Height, CUstream hStream) {
  FAKE_API(cuMemsetD2D16Async);
  FAKE_NEEDS_STREAM(hStream);
  return fill(dstDevice, dstPitch, us, Width, Height);
}

CUresult fake_cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                 size_t Width, size_t Height, CUstream hStream) {
  FAKE_API(cuMemsetD2D32Async);
  FAKE_NEEDS_STREAM(hStream);
  return fill(dstDevice, dstPitch, ui, Width, Height);
}

} // namespace

CUresult run_copy_3d(const CUDA_MEMCPY3D *copy) { return copy_3d(copy); }

CUresult run_fill(const CUDA_MEMSET_NODE_PARAMS *f) {
  if (!f)
    return CUDA_ERROR_INVALID_VALUE;
  switch (f->elementSize) {
  case 1:
    return fill(f->dst, f->pitch, static_cast<unsigned char>(f->value), f->width, f->height);
  case 2:
    return fill(f->dst, f->pitch, static_cast<unsigned short>(f->value), f->width, f->height);
  case 4:
    return fill(f->dst, f->pitch, f->value, f->width, f->height);
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

void add_copy_entries(entry_table &t) {
  FAKE_REGISTER(t, cuMemcpy);
  FAKE_REGISTER(t, cuMemcpyAsync);
  FAKE_REGISTER(t, cuMemcpyHtoD);
  FAKE_REGISTER(t, cuMemcpyDtoH);
  FAKE_REGISTER(t, cuMemcpyDtoD);
  FAKE_REGISTER(t, cuMemcpyHtoDAsync);
  FAKE_REGISTER(t, cuMemcpyDtoHAsync);
  FAKE_REGISTER(t, cuMemcpyDtoDAsync);
  FAKE_REGISTER(t, cuMemcpyPeer);
  FAKE_REGISTER(t, cuMemcpyPeerAsync);
  FAKE_REGISTER(t, cuMemcpy2D);
  FAKE_REGISTER(t, cuMemcpy2DUnaligned);
  FAKE_REGISTER(t, cuMemcpy2DAsync);
  FAKE_REGISTER(t, cuMemcpy3D);
  FAKE_REGISTER(t, cuMemcpy3DAsync);
  FAKE_REGISTER(t, cuMemcpy3DPeer);
  FAKE_REGISTER(t, cuMemcpy3DPeerAsync);
  FAKE_REGISTER(t, cuMemsetD8);
  FAKE_REGISTER(t, cuMemsetD16);
  FAKE_REGISTER(t, cuMemsetD32);
  FAKE_REGISTER(t, cuMemsetD2D8);
  FAKE_REGISTER(t, cuMemsetD2D16);
  FAKE_REGISTER(t, cuMemsetD2D32);
  FAKE_REGISTER(t, cuMemsetD8Async);
  FAKE_REGISTER(t, cuMemsetD16Async);
  FAKE_REGISTER(t, cuMemsetD32Async);
  FAKE_REGISTER(t, cuMemsetD2D8Async);
  FAKE_REGISTER(t, cuMemsetD2D16Async);
  FAKE_REGISTER(t, cuMemsetD2D32Async);
}

} // namespace fake
