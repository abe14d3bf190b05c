// Interop plugin over the CUDA driver's OpenGL graphics API, registered as interop "gl".
#include "gl_interop.hpp"

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <string>
#include <vector>

namespace cuplug::plugins {
namespace {

// What usually lies behind a failed registration, for the error message: the driver's own
// description ("invalid argument") does not say that GL state is the cause.
std::string register_hint(CUresult result, const std::string &what) {
  switch (result) {
  case CUDA_ERROR_INVALID_VALUE:
    return what + " is not a GL object with storage in the GL context current on this thread "
                  "(create it with glGen*, give it storage with glBufferData / glTexImage*, and "
                  "register it with that GL context current)";
  case CUDA_ERROR_INVALID_GRAPHICS_CONTEXT:
  case CUDA_ERROR_UNKNOWN:
  case CUDA_ERROR_OPERATING_SYSTEM:
    return "no usable GL context is current on this thread, or it does not run on the CUDA "
           "context's GPU (make the GL context current first; GL must be NVIDIA's, not Mesa's, "
           "for CUDA to share its objects)";
  case CUDA_ERROR_NOT_SUPPORTED:
    return what + " has a format or target CUDA cannot map (use 1, 2 or 4 channels of 8, 16 "
                  "or 32 bits)";
  default:
    return {};
  }
}

std::string image_name(const gl_image &image) {
  return std::string(to_string(image.target)) + " " + std::to_string(image.name);
}

} // namespace

gl_interop::gl_interop(const options &) {}

void gl_interop::do_initialize() {
  const driver_api &d = driver();
  if (d.cuGraphicsGLRegisterBuffer == nullptr || d.cuGraphicsMapResources == nullptr)
    throw not_supported("interop 'gl': the CUDA driver (" + driver_library_description() +
                        ") has no OpenGL interop entry points (cuGraphicsGLRegisterBuffer); "
                        "use NVIDIA's driver with its GL libraries");
}

CUgraphicsResource gl_interop::do_register_buffer(std::uint32_t gl_buffer, interop_flags flags) {
  CUgraphicsResource r = nullptr;
  const CUresult result =
      detail::entry(driver().cuGraphicsGLRegisterBuffer,
                    "cuGraphicsGLRegisterBuffer")(&r, gl_buffer, static_cast<unsigned>(flags));
  if (result != CUDA_SUCCESS)
    throw cuda_error("cuGraphicsGLRegisterBuffer", result,
                     register_hint(result, "GL buffer " + std::to_string(gl_buffer)));
  return r;
}

CUgraphicsResource gl_interop::do_register_image(const gl_image &image, interop_flags flags) {
  CUgraphicsResource r = nullptr;
  const CUresult result =
      detail::entry(driver().cuGraphicsGLRegisterImage, "cuGraphicsGLRegisterImage")(
          &r, image.name, static_cast<unsigned>(image.target), static_cast<unsigned>(flags));
  if (result != CUDA_SUCCESS)
    throw cuda_error("cuGraphicsGLRegisterImage", result,
                     register_hint(result, "GL image " + image_name(image)));
  return r;
}

void gl_interop::do_unregister(CUgraphicsResource resource) {
  CUPLUG_CALL(cuGraphicsUnregisterResource, resource);
}

void gl_interop::do_map(const CUgraphicsResource *resources, std::size_t count, CUstream stream) {
  // The driver takes a non-const array it does not modify.
  std::vector<CUgraphicsResource> list(resources, resources + count);
  CUPLUG_CALL(cuGraphicsMapResources, static_cast<unsigned>(count), list.data(), stream);
}

void gl_interop::do_unmap(const CUgraphicsResource *resources, std::size_t count, CUstream stream) {
  std::vector<CUgraphicsResource> list(resources, resources + count);
  CUPLUG_CALL(cuGraphicsUnmapResources, static_cast<unsigned>(count), list.data(), stream);
}

mapped_buffer gl_interop::do_mapped_pointer(CUgraphicsResource resource) {
  mapped_buffer out;
  CUPLUG_CALL(cuGraphicsResourceGetMappedPointer, &out.ptr, &out.bytes, resource);
  return out;
}

CUarray gl_interop::do_mapped_array(CUgraphicsResource resource, unsigned array_index,
                                    unsigned mip_level) {
  CUarray out = nullptr;
  CUPLUG_CALL(cuGraphicsSubResourceGetMappedArray, &out, resource, array_index, mip_level);
  return out;
}

} // namespace cuplug::plugins

CUPLUG_PLUGIN(interop, cuplug::plugins::gl_interop, "gl",
              "OpenGL buffers and images shared with CUDA (cuGraphicsGL*), no host copy",
              CUPLUG_PLUGIN_VERSION)
