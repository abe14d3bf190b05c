// Graphics interop (cuGraphicsGLRegister*, map / unmap, mapped pointers and arrays) over GL
// objects that tests declare (fake_cuda_gl_buffer / fake_cuda_gl_image): there is no GL here.
#include "fake_cuda.h"
#include "fake_state.hpp"

#include <algorithm>
#include <cstring>

// cudaGL.h's prototypes, with GLuint and GLenum spelled out (there is no GL header here).
extern "C" {
CUresult CUDAAPI cuGraphicsGLRegisterBuffer(CUgraphicsResource *pCudaResource, unsigned int buffer,
                                            unsigned int Flags);
CUresult CUDAAPI cuGraphicsGLRegisterImage(CUgraphicsResource *pCudaResource, unsigned int image,
                                           unsigned int target, unsigned int Flags);
}

// A registered GL buffer or image.
struct CUgraphicsResource_st {
  CUcontext ctx = nullptr;
  bool image = false;
  unsigned name = 0, target = 0, register_flags = 0, map_flags = 0;
  bool mapped = false;
  CUdeviceptr ptr = 0; // buffers: an address for the GL buffer's bytes
  size_t bytes = 0;
  std::vector<CUarray> arrays; // images: one per (array index, mip level), index-major
  unsigned levels = 1;
};

namespace fake {
namespace {

constexpr unsigned gl_texture_2d = 0x0DE1, gl_texture_rectangle = 0x84F5,
                   gl_texture_cube_map = 0x8513, gl_texture_3d = 0x806F,
                   gl_texture_2d_array = 0x8C1A, gl_renderbuffer = 0x8D41;

struct gl_buffer {
  std::shared_ptr<unsigned char> bytes;
  size_t size = 0;
};
struct gl_image {
  unsigned target = 0;
  size_t width = 0, height = 0, depth = 0;
  unsigned levels = 1;
  CUarray_format format = CU_AD_FORMAT_UNSIGNED_INT8;
  unsigned channels = 4;
};

// Reset with the rest of the fake (fake_cuda_reset bumps the epoch).
struct graphics_state {
  uint64_t epoch = 0;
  std::map<unsigned, gl_buffer> buffers;
  std::map<unsigned, gl_image> images; // by name (names are per target in GL; one space here)
  std::unordered_set<CUgraphicsResource> live;
};

graphics_state &graphics() {
  static auto *g = new graphics_state;
  if (g->epoch != state().epoch) {
    g->buffers.clear();
    g->images.clear();
    g->live.clear();
    g->epoch = state().epoch;
  }
  return *g;
}

CUresult check_resource(CUgraphicsResource r) {
  return check_handle(graphics().live, r, "graphics resource");
}

CUresult new_resource(CUgraphicsResource *out, CUgraphicsResource_st r) {
  FAKE_CHECK(current_context(&r.ctx));
  auto *made = new CUgraphicsResource_st(std::move(r));
  graphics().live.insert(made);
  *out = made;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphicsGLRegisterBuffer(CUgraphicsResource *pCudaResource, unsigned int buffer,
                                         unsigned int Flags) {
  FAKE_API(cuGraphicsGLRegisterBuffer);
  if (!pCudaResource || Flags > CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  auto found = graphics().buffers.find(buffer);
  if (found == graphics().buffers.end() || found->second.size == 0)
    return CUDA_ERROR_INVALID_VALUE; // not a GL buffer, or one without storage
  CUgraphicsResource_st r;
  r.name = buffer;
  r.register_flags = r.map_flags = Flags;
  r.bytes = found->second.size;
  // The GL buffer's own bytes behind a device address, as the driver shares GL's memory.
  r.ptr = reserve_device_range(ctx->device, r.bytes);
  if (!r.ptr)
    return CUDA_ERROR_OUT_OF_MEMORY;
  allocation a;
  a.base = r.ptr;
  a.size = r.bytes;
  a.backing = found->second.bytes;
  a.ctx = ctx;
  a.device = ctx->device;
  add_allocation(std::move(a));
  return new_resource(pCudaResource, std::move(r));
}

CUresult fake_cuGraphicsGLRegisterImage(CUgraphicsResource *pCudaResource, unsigned int image,
                                        unsigned int target, unsigned int Flags) {
  FAKE_API(cuGraphicsGLRegisterImage);
  constexpr unsigned known =
      CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY | CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD |
      CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST | CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER;
  if (!pCudaResource || (Flags & ~known) ||
      (Flags & CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY &&
       Flags & CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD))
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  auto found = graphics().images.find(image);
  if (found == graphics().images.end() || found->second.target != target)
    return CUDA_ERROR_INVALID_VALUE; // no such image of that target
  const gl_image &g = found->second;
  CUgraphicsResource_st r;
  r.image = true;
  r.name = image;
  r.target = target;
  r.register_flags = Flags;
  r.levels = g.levels;
  const bool is_3d = target == gl_texture_3d;
  const size_t layers = target == gl_texture_cube_map ? 6
                        : is_3d                       ? 1
                                                      : std::max<size_t>(g.depth, 1);
  for (size_t layer = 0; layer < layers; ++layer)
    for (unsigned level = 0; level < g.levels; ++level) {
      auto *a = new CUarray_st;
      a->ctx = ctx;
      a->desc.Width = std::max<size_t>(g.width >> level, 1);
      a->desc.Height = std::max<size_t>(g.height >> level, 1);
      a->desc.Depth = is_3d ? std::max<size_t>(g.depth >> level, 1) : 0;
      a->desc.Format = g.format;
      a->desc.NumChannels = g.channels;
      a->desc.Flags =
          Flags & CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST ? CUDA_ARRAY3D_SURFACE_LDST : 0;
      a->element = (g.format == CU_AD_FORMAT_FLOAT ? 4 : 1) * g.channels;
      a->bytes.assign(a->row_bytes() * a->rows() * a->slices(), 0);
      state().arrays.insert(a);
      r.arrays.push_back(a);
    }
  return new_resource(pCudaResource, std::move(r));
}

void release(CUgraphicsResource r) {
  graphics().live.erase(r); // the record stays as a tombstone
  if (r->ptr)
    remove_allocation(r->ptr);
  for (CUarray a : r->arrays)
    state().arrays.erase(a);
  r->mapped = false;
}

CUresult fake_cuGraphicsUnregisterResource(CUgraphicsResource resource) {
  FAKE_API(cuGraphicsUnregisterResource);
  FAKE_CHECK(check_resource(resource));
  release(resource); // a mapped resource is unmapped first
  return CUDA_SUCCESS;
}

// The resources of a map / unmap call: all live, none listed twice.
CUresult check_list(unsigned count, CUgraphicsResource *resources, CUstream stream) {
  if (count == 0 || !resources)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(stream_context(stream, &ctx));
  for (unsigned i = 0; i < count; ++i) {
    FAKE_CHECK(check_resource(resources[i]));
    if (std::find(resources, resources + i, resources[i]) != resources + i)
      return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphicsMapResources(unsigned int count, CUgraphicsResource *resources,
                                     CUstream hStream) {
  FAKE_API(cuGraphicsMapResources);
  FAKE_CHECK(check_list(count, resources, hStream));
  for (unsigned i = 0; i < count; ++i)
    if (resources[i]->mapped)
      return CUDA_ERROR_ALREADY_MAPPED; // and none of them is mapped by this call
  for (unsigned i = 0; i < count; ++i)
    resources[i]->mapped = true;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphicsUnmapResources(unsigned int count, CUgraphicsResource *resources,
                                       CUstream hStream) {
  FAKE_API(cuGraphicsUnmapResources);
  FAKE_CHECK(check_list(count, resources, hStream));
  for (unsigned i = 0; i < count; ++i)
    if (!resources[i]->mapped)
      return CUDA_ERROR_NOT_MAPPED;
  for (unsigned i = 0; i < count; ++i)
    resources[i]->mapped = false;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphicsResourceGetMappedPointer(CUdeviceptr *pDevPtr, size_t *pSize,
                                                 CUgraphicsResource resource) {
  FAKE_API(cuGraphicsResourceGetMappedPointer);
  FAKE_CHECK(check_resource(resource));
  if (!resource->mapped)
    return CUDA_ERROR_NOT_MAPPED;
  if (resource->image)
    return CUDA_ERROR_NOT_MAPPED_AS_POINTER;
  if (pDevPtr)
    *pDevPtr = resource->ptr;
  if (pSize)
    *pSize = resource->bytes;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphicsSubResourceGetMappedArray(CUarray *pArray, CUgraphicsResource resource,
                                                  unsigned int arrayIndex, unsigned int mipLevel) {
  FAKE_API(cuGraphicsSubResourceGetMappedArray);
  if (!pArray)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_resource(resource));
  if (!resource->mapped)
    return CUDA_ERROR_NOT_MAPPED;
  if (!resource->image)
    return CUDA_ERROR_NOT_MAPPED_AS_ARRAY;
  const size_t index = size_t(arrayIndex) * resource->levels + mipLevel;
  if (mipLevel >= resource->levels || index >= resource->arrays.size())
    return CUDA_ERROR_INVALID_VALUE;
  *pArray = resource->arrays[index];
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphicsResourceSetMapFlags(CUgraphicsResource resource, unsigned int flags) {
  FAKE_API(cuGraphicsResourceSetMapFlags);
  FAKE_CHECK(check_resource(resource));
  if (flags > CU_GRAPHICS_MAP_RESOURCE_FLAGS_WRITE_DISCARD)
    return CUDA_ERROR_INVALID_VALUE;
  if (resource->mapped)
    return CUDA_ERROR_ALREADY_MAPPED;
  resource->map_flags = flags;
  return CUDA_SUCCESS;
}

} // namespace

void add_graphics_entries(entry_table &t) {
  FAKE_REGISTER(t, cuGraphicsGLRegisterBuffer);
  FAKE_REGISTER(t, cuGraphicsGLRegisterImage);
  FAKE_REGISTER(t, cuGraphicsUnregisterResource);
  FAKE_REGISTER(t, cuGraphicsMapResources);
  FAKE_REGISTER(t, cuGraphicsUnmapResources);
  FAKE_REGISTER(t, cuGraphicsResourceGetMappedPointer);
  FAKE_REGISTER(t, cuGraphicsSubResourceGetMappedArray);
  FAKE_REGISTER(t, cuGraphicsResourceSetMapFlags);
}

} // namespace fake

extern "C" {

int fake_cuda_gl_buffer(unsigned name, size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  if (name == 0)
    return -1;
  auto &buffers = fake::graphics().buffers;
  if (bytes == 0) {
    buffers.erase(name);
    return 0;
  }
  auto backing = fake::allocate_host(bytes);
  if (!backing)
    return -1;
  buffers[name] = {std::move(backing), bytes};
  return 0;
}

void *fake_cuda_gl_buffer_data(unsigned name) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  auto &buffers = fake::graphics().buffers;
  auto found = buffers.find(name);
  return found == buffers.end() ? nullptr : found->second.bytes.get();
}

int fake_cuda_gl_image(unsigned target, unsigned name, size_t width, size_t height, size_t depth,
                       unsigned levels, int format, unsigned channels) {
  using namespace fake;
  std::lock_guard<std::recursive_mutex> lock(mutex());
  const bool known_target = target == gl_texture_2d || target == gl_texture_rectangle ||
                            target == gl_texture_cube_map || target == gl_texture_3d ||
                            target == gl_texture_2d_array || target == gl_renderbuffer;
  if (name == 0 || !known_target || width == 0 || height == 0 || levels == 0 ||
      (format != CU_AD_FORMAT_UNSIGNED_INT8 && format != CU_AD_FORMAT_FLOAT) ||
      (channels != 1 && channels != 2 && channels != 4))
    return -1;
  graphics().images[name] = {
      target, width, height, depth, levels, static_cast<CUarray_format>(format), channels};
  return 0;
}

long fake_cuda_live_graphics_resources(void) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  return static_cast<long>(fake::graphics().live.size());
}

} // extern "C"
