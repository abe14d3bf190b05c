// The interop interface's public door: argument checks, foreign-exception translation, and the
// non-throwing release.
#include <cuplug/interop.hpp>
#include <cuplug/log.hpp>

#include "foreign_exceptions.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

namespace cuplug {
namespace {

constexpr interop_flags known_flags = interop_flags::read_only | interop_flags::write_discard |
                                      interop_flags::surface_load_store |
                                      interop_flags::texture_gather;
constexpr interop_flags image_only_flags =
    interop_flags::surface_load_store | interop_flags::texture_gather;

std::string hex(unsigned value) {
  char out[16];
  std::snprintf(out, sizeof out, "0x%x", value);
  return out;
}

void check_flags(const char *call, interop_flags flags) {
  if ((flags & known_flags) != flags)
    throw std::invalid_argument(std::string(call) + ": flags " + hex(static_cast<unsigned>(flags)) +
                                " hold bits that are not interop_flags (read_only, "
                                "write_discard, surface_load_store, texture_gather)");
  if (has_any(flags, interop_flags::read_only) && has_any(flags, interop_flags::write_discard))
    throw std::invalid_argument(std::string(call) +
                                ": read_only and write_discard exclude each other (CUDA either "
                                "only reads the resource or overwrites it without reading)");
}

bool known_target(gl_image_target target) { return std::string(to_string(target)) != "unknown"; }

void check_resources(const char *call, const std::vector<CUgraphicsResource> &resources) {
  for (std::size_t i = 0; i < resources.size(); ++i) {
    if (resources[i] == nullptr)
      throw std::invalid_argument(std::string(call) + ": resource " + std::to_string(i) + " of " +
                                  std::to_string(resources.size()) + " is null; register it first");
    for (std::size_t j = 0; j < i; ++j)
      if (resources[j] == resources[i])
        throw std::invalid_argument(std::string(call) + ": resources " + std::to_string(j) +
                                    " and " + std::to_string(i) +
                                    " are the same resource; list each once");
  }
}

} // namespace

const char *to_string(gl_image_target target) noexcept {
  switch (target) {
  case gl_image_target::texture_2d:
    return "GL_TEXTURE_2D";
  case gl_image_target::texture_rectangle:
    return "GL_TEXTURE_RECTANGLE";
  case gl_image_target::texture_cube_map:
    return "GL_TEXTURE_CUBE_MAP";
  case gl_image_target::texture_3d:
    return "GL_TEXTURE_3D";
  case gl_image_target::texture_2d_array:
    return "GL_TEXTURE_2D_ARRAY";
  case gl_image_target::renderbuffer:
    return "GL_RENDERBUFFER";
  }
  return "unknown";
}

void interop::initialize() {
  try {
    do_initialize();
  } catch (...) {
    detail::rethrow_as_core_error(*this, "interop", "initialize");
  }
}

CUgraphicsResource interop::register_buffer(std::uint32_t gl_buffer, interop_flags flags) {
  if (gl_buffer == 0)
    throw std::invalid_argument("interop::register_buffer: GL buffer 0 is not a buffer object; "
                                "pass a name from glGenBuffers");
  check_flags("interop::register_buffer", flags);
  if (has_any(flags, image_only_flags))
    throw std::invalid_argument("interop::register_buffer: surface_load_store and "
                                "texture_gather are for images; register images with "
                                "register_image");
  CUgraphicsResource r = nullptr;
  try {
    r = do_register_buffer(gl_buffer, flags);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "interop", "register_buffer");
  }
  if (r == nullptr)
    throw plugin_error("interop '" + backend_name() + "' returned no resource for GL buffer " +
                       std::to_string(gl_buffer) + " instead of raising an error");
  return r;
}

CUgraphicsResource interop::register_image(const gl_image &image, interop_flags flags) {
  if (!known_target(image.target))
    throw std::invalid_argument(
        "interop::register_image: GL target " + hex(static_cast<unsigned>(image.target)) +
        " cannot be registered; use GL_TEXTURE_2D, GL_TEXTURE_RECTANGLE, GL_TEXTURE_CUBE_MAP, "
        "GL_TEXTURE_3D, GL_TEXTURE_2D_ARRAY or GL_RENDERBUFFER (gl_image_target)");
  if (image.name == 0)
    throw std::invalid_argument(std::string("interop::register_image: GL ") +
                                to_string(image.target) +
                                " image 0 is not an image object; pass a name from "
                                "glGenTextures or glGenRenderbuffers");
  check_flags("interop::register_image", flags);
  CUgraphicsResource r = nullptr;
  try {
    r = do_register_image(image, flags);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "interop", "register_image");
  }
  if (r == nullptr)
    throw plugin_error("interop '" + backend_name() + "' returned no resource for " +
                       to_string(image.target) + " image " + std::to_string(image.name) +
                       " instead of raising an error");
  return r;
}

void interop::unregister(CUgraphicsResource resource) noexcept {
  if (resource == nullptr)
    return;
  try {
    do_unregister(resource);
  } catch (const std::exception &e) {
    log_warning("cuplug WARNING: interop '" + backend_name() +
                "' failed to unregister a resource: " + e.what());
  } catch (...) {
    log_warning("cuplug WARNING: interop '" + backend_name() + "' failed to unregister a resource");
  }
}

void interop::map(const std::vector<CUgraphicsResource> &resources, CUstream stream) {
  check_resources("interop::map", resources);
  if (resources.empty())
    return;
  try {
    do_map(resources.data(), resources.size(), stream);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "interop", "map");
  }
}

void interop::unmap(const std::vector<CUgraphicsResource> &resources, CUstream stream) {
  check_resources("interop::unmap", resources);
  if (resources.empty())
    return;
  try {
    do_unmap(resources.data(), resources.size(), stream);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "interop", "unmap");
  }
}

mapped_buffer interop::mapped_pointer(CUgraphicsResource resource) {
  if (resource == nullptr)
    throw std::invalid_argument("interop::mapped_pointer: the resource is null");
  mapped_buffer out;
  try {
    out = do_mapped_pointer(resource);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "interop", "mapped_pointer");
  }
  if (out.ptr == 0)
    throw plugin_error("interop '" + backend_name() +
                       "' returned a null address for a mapped buffer instead of raising an "
                       "error");
  return out;
}

CUarray interop::mapped_array(CUgraphicsResource resource, unsigned array_index,
                              unsigned mip_level) {
  if (resource == nullptr)
    throw std::invalid_argument("interop::mapped_array: the resource is null");
  CUarray out = nullptr;
  try {
    out = do_mapped_array(resource, array_index, mip_level);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "interop", "mapped_array");
  }
  if (out == nullptr)
    throw plugin_error("interop '" + backend_name() + "' returned no CUDA array for array index " +
                       std::to_string(array_index) + ", mip level " + std::to_string(mip_level) +
                       " instead of raising an error");
  return out;
}

} // namespace cuplug
