// CUDA arrays (host-side texels with their descriptor), 1D copies to and from them, and texture
// and surface objects as handles that remember their resource. Sampling is never modelled.
#include "fake_state.hpp"

#include <cstring>

namespace fake {

CUresult check_array(CUarray a) {
  if (a == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  return check_handle(state().arrays, a, "array");
}

void release_context_arrays(CUcontext ctx) {
  auto &s = state();
  for (auto it = s.arrays.begin(); it != s.arrays.end();)
    it = (*it)->ctx == ctx ? s.arrays.erase(it) : std::next(it);
  for (auto *objects : {&s.textures, &s.surfaces})
    for (auto it = objects->begin(); it != objects->end();)
      it = it->second.ctx == ctx ? objects->erase(it) : std::next(it);
}

namespace {

// Bytes of one channel; 0 for formats the fake does not model (block-compressed, packed ...).
size_t channel_bytes(CUarray_format f) {
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8:
  case CU_AD_FORMAT_SIGNED_INT8:
    return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16:
  case CU_AD_FORMAT_SIGNED_INT16:
  case CU_AD_FORMAT_HALF:
    return 2;
  case CU_AD_FORMAT_UNSIGNED_INT32:
  case CU_AD_FORMAT_SIGNED_INT32:
  case CU_AD_FORMAT_FLOAT:
    return 4;
  default:
    return 0;
  }
}

constexpr unsigned known_array_flags = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST |
                                       CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER;

CUresult create_array(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d) {
  if (!out || !d)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  const size_t channel = channel_bytes(d->Format);
  if (channel == 0)
    return d->Format == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
  if (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4)
    return CUDA_ERROR_INVALID_VALUE;
  if (d->Flags & ~known_array_flags)
    return CUDA_ERROR_INVALID_VALUE;
  const bool layered = d->Flags & CUDA_ARRAY3D_LAYERED;
  // 1D: Height == Depth == 0; 2D: Depth == 0; a layered array's Depth counts its layers.
  if (d->Width == 0 || (d->Height == 0 && d->Depth != 0 && !layered))
    return CUDA_ERROR_INVALID_VALUE;
  if ((d->Flags & CUDA_ARRAY3D_CUBEMAP) && (d->Width != d->Height || d->Depth != 6))
    return CUDA_ERROR_INVALID_VALUE;
  auto *a = new CUarray_st;
  a->ctx = ctx;
  a->desc = *d;
  a->element = channel * d->NumChannels;
  a->bytes.assign(a->row_bytes() * a->rows() * a->slices(), 0);
  state().arrays.insert(a);
  *out = a;
  return CUDA_SUCCESS;
}

CUresult fake_cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray) {
  FAKE_API(cuArrayCreate);
  if (!pAllocateArray)
    return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = pAllocateArray->Width;
  d.Height = pAllocateArray->Height;
  d.Format = pAllocateArray->Format;
  d.NumChannels = pAllocateArray->NumChannels;
  return create_array(pHandle, &d);
}

CUresult fake_cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray) {
  FAKE_API(cuArray3DCreate);
  return create_array(pHandle, pAllocateArray);
}

CUresult fake_cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray) {
  FAKE_API(cuArrayGetDescriptor);
  FAKE_CHECK(check_array(hArray));
  if (!pArrayDescriptor)
    return CUDA_ERROR_INVALID_VALUE;
  pArrayDescriptor->Width = hArray->desc.Width;
  pArrayDescriptor->Height = hArray->desc.Height;
  pArrayDescriptor->Format = hArray->desc.Format;
  pArrayDescriptor->NumChannels = hArray->desc.NumChannels;
  return CUDA_SUCCESS;
}

CUresult fake_cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray) {
  FAKE_API(cuArray3DGetDescriptor);
  FAKE_CHECK(check_array(hArray));
  if (!pArrayDescriptor)
    return CUDA_ERROR_INVALID_VALUE;
  *pArrayDescriptor = hArray->desc;
  return CUDA_SUCCESS;
}

CUresult fake_cuArrayDestroy(CUarray hArray) {
  FAKE_API(cuArrayDestroy);
  FAKE_CHECK(check_array(hArray));
  state().arrays.erase(hArray); // the record stays as a tombstone
  hArray->bytes.clear();
  hArray->bytes.shrink_to_fit();
  return CUDA_SUCCESS;
}

// The texels [offset, offset + n) of a live array, as linear bytes.
CUresult array_range(CUarray a, size_t offset, size_t n, unsigned char **out) {
  FAKE_CHECK(check_array(a));
  if (offset > a->bytes.size() || n > a->bytes.size() - offset)
    return CUDA_ERROR_INVALID_VALUE;
  *out = a->bytes.data() + offset;
  return CUDA_SUCCESS;
}

CUresult htoa(CUarray dst, size_t offset, const void *src, size_t n) {
  unsigned char *d;
  FAKE_CHECK(array_range(dst, offset, n, &d));
  FAKE_CHECK(host_range(src, n));
  if (n)
    std::memmove(d, src, n);
  return CUDA_SUCCESS;
}

CUresult atoh(void *dst, CUarray src, size_t offset, size_t n) {
  unsigned char *s;
  FAKE_CHECK(array_range(src, offset, n, &s));
  FAKE_CHECK(host_range(dst, n));
  if (n)
    std::memmove(dst, s, n);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemcpyHtoA(CUarray dstArray, size_t dstOffset, const void *srcHost,
                           size_t ByteCount) {
  FAKE_API(cuMemcpyHtoA);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  return htoa(dstArray, dstOffset, srcHost, ByteCount);
}

CUresult fake_cuMemcpyAtoH(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  FAKE_API(cuMemcpyAtoH);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  return atoh(dstHost, srcArray, srcOffset, ByteCount);
}

CUresult fake_cuMemcpyHtoAAsync(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                size_t ByteCount, CUstream hStream) {
  FAKE_API(cuMemcpyHtoAAsync);
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  return htoa(dstArray, dstOffset, srcHost, ByteCount);
}

CUresult fake_cuMemcpyAtoHAsync(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
                                CUstream hStream) {
  FAKE_API(cuMemcpyAtoHAsync);
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  return atoh(dstHost, srcArray, srcOffset, ByteCount);
}

CUresult fake_cuMemcpyAtoD(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                           size_t ByteCount) {
  FAKE_API(cuMemcpyAtoD);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  unsigned char *s, *d;
  FAKE_CHECK(array_range(srcArray, srcOffset, ByteCount, &s));
  if (ByteCount == 0)
    return CUDA_SUCCESS;
  FAKE_CHECK(device_range(dstDevice, ByteCount, &d));
  std::memmove(d, s, ByteCount);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemcpyDtoA(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                           size_t ByteCount) {
  FAKE_API(cuMemcpyDtoA);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  unsigned char *s, *d;
  FAKE_CHECK(array_range(dstArray, dstOffset, ByteCount, &d));
  if (ByteCount == 0)
    return CUDA_SUCCESS;
  FAKE_CHECK(device_range(srcDevice, ByteCount, &s));
  std::memmove(d, s, ByteCount);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemcpyAtoA(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                           size_t ByteCount) {
  FAKE_API(cuMemcpyAtoA);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  unsigned char *s, *d;
  FAKE_CHECK(array_range(dstArray, dstOffset, ByteCount, &d));
  FAKE_CHECK(array_range(srcArray, srcOffset, ByteCount, &s));
  if (ByteCount)
    std::memmove(d, s, ByteCount);
  return CUDA_SUCCESS;
}

// Texture and surface objects ------------------------------------------------------------------

// What the driver checks of a resource before it makes a sampler of it.
CUresult check_resource(const CUDA_RESOURCE_DESC *r) {
  if (!r || r->flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  switch (r->resType) {
  case CU_RESOURCE_TYPE_ARRAY:
    return check_array(r->res.array.hArray);
  case CU_RESOURCE_TYPE_LINEAR: { // address: TEXTURE_ALIGNMENT (512)
    const auto &l = r->res.linear;
    const size_t channel = channel_bytes(l.format);
    if (channel == 0 || (l.numChannels != 1 && l.numChannels != 2 && l.numChannels != 4) ||
        l.devPtr % 512 != 0 || l.sizeInBytes == 0)
      return CUDA_ERROR_INVALID_VALUE;
    unsigned char *bytes;
    return device_range(l.devPtr, l.sizeInBytes, &bytes);
  }
  case CU_RESOURCE_TYPE_PITCH2D: { // address: TEXTURE_ALIGNMENT (512), as the real driver 13.0
    // on an H100 wants, not the TEXTURE_PITCH_ALIGNMENT (32) of the documentation; pitch: 32
    const auto &p = r->res.pitch2D;
    const size_t channel = channel_bytes(p.format);
    if (channel == 0 || (p.numChannels != 1 && p.numChannels != 2 && p.numChannels != 4) ||
        p.devPtr % 512 != 0 || p.pitchInBytes % 32 != 0 || p.width == 0 || p.height == 0 ||
        p.width * channel * p.numChannels > p.pitchInBytes)
      return CUDA_ERROR_INVALID_VALUE;
    unsigned char *bytes;
    return device_range(p.devPtr, p.pitchInBytes * p.height, &bytes);
  }
  default:
    return CUDA_ERROR_NOT_SUPPORTED; // mipmapped arrays are not modelled
  }
}

CUresult fake_cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
                                const CUDA_TEXTURE_DESC *pTexDesc,
                                const CUDA_RESOURCE_VIEW_DESC *pResViewDesc) {
  FAKE_API(cuTexObjectCreate);
  if (!pTexObject || !pTexDesc)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  FAKE_CHECK(check_resource(pResDesc));
  if (pResViewDesc)
    return CUDA_ERROR_NOT_SUPPORTED; // resource views are not modelled
  for (CUaddress_mode m : pTexDesc->addressMode)
    if (m < CU_TR_ADDRESS_MODE_WRAP || m > CU_TR_ADDRESS_MODE_BORDER)
      return CUDA_ERROR_INVALID_VALUE;
  if (pTexDesc->filterMode != CU_TR_FILTER_MODE_POINT &&
      pTexDesc->filterMode != CU_TR_FILTER_MODE_LINEAR)
    return CUDA_ERROR_INVALID_VALUE;
  auto &s = state();
  const unsigned long long handle = s.next_sampler++;
  s.textures[handle] = sampler_record{ctx, *pResDesc, *pTexDesc};
  *pTexObject = handle;
  return CUDA_SUCCESS;
}

// A texture or surface handle: 0 is INVALID_VALUE, one never made or destroyed is undefined
// behaviour (the real driver's answer to it is not reliable).
CUresult check_sampler(std::map<unsigned long long, sampler_record> &live, unsigned long long h,
                       const char *kind) {
  if (h == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (live.count(h))
    return CUDA_SUCCESS;
  return undefined_behaviour(CUDA_ERROR_INVALID_HANDLE, std::string(kind) + " object " +
                                                            std::to_string(h) +
                                                            " was destroyed or never created");
}

CUresult fake_cuTexObjectDestroy(CUtexObject texObject) {
  FAKE_API(cuTexObjectDestroy);
  FAKE_CHECK(check_sampler(state().textures, texObject, "texture"));
  state().textures.erase(texObject);
  return CUDA_SUCCESS;
}

CUresult fake_cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject) {
  FAKE_API(cuTexObjectGetResourceDesc);
  FAKE_CHECK(check_sampler(state().textures, texObject, "texture"));
  if (!pResDesc)
    return CUDA_ERROR_INVALID_VALUE;
  *pResDesc = state().textures[texObject].resource;
  return CUDA_SUCCESS;
}

CUresult fake_cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc) {
  FAKE_API(cuSurfObjectCreate);
  if (!pSurfObject || !pResDesc)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (pResDesc->resType != CU_RESOURCE_TYPE_ARRAY)
    return CUDA_ERROR_INVALID_VALUE;
  // The documentation asks for an array made with CUDA_ARRAY3D_SURFACE_LDST, but the real driver
  // (13.0, H100) makes the surface object of any array: SurfaceObject checks the flag itself.
  FAKE_CHECK(check_resource(pResDesc));
  auto &s = state();
  const unsigned long long handle = s.next_sampler++;
  s.surfaces[handle] = sampler_record{ctx, *pResDesc, {}};
  *pSurfObject = handle;
  return CUDA_SUCCESS;
}

CUresult fake_cuSurfObjectDestroy(CUsurfObject surfObject) {
  FAKE_API(cuSurfObjectDestroy);
  FAKE_CHECK(check_sampler(state().surfaces, surfObject, "surface"));
  state().surfaces.erase(surfObject);
  return CUDA_SUCCESS;
}

} // namespace

void add_array_entries(entry_table &t) {
  FAKE_REGISTER(t, cuArrayCreate);
  FAKE_REGISTER(t, cuArrayGetDescriptor);
  FAKE_REGISTER(t, cuArray3DCreate);
  FAKE_REGISTER(t, cuArray3DGetDescriptor);
  FAKE_REGISTER(t, cuArrayDestroy);
  FAKE_REGISTER(t, cuMemcpyHtoA);
  FAKE_REGISTER(t, cuMemcpyAtoH);
  FAKE_REGISTER(t, cuMemcpyAtoD);
  FAKE_REGISTER(t, cuMemcpyDtoA);
  FAKE_REGISTER(t, cuMemcpyAtoA);
  FAKE_REGISTER(t, cuMemcpyHtoAAsync);
  FAKE_REGISTER(t, cuMemcpyAtoHAsync);
  FAKE_REGISTER(t, cuTexObjectCreate);
  FAKE_REGISTER(t, cuTexObjectDestroy);
  FAKE_REGISTER(t, cuTexObjectGetResourceDesc);
  FAKE_REGISTER(t, cuSurfObjectCreate);
  FAKE_REGISTER(t, cuSurfObjectDestroy);
}

} // namespace fake
