// The graphics interop interface: share GL buffers and images with CUDA without a host copy.
#pragma once

#include <cuplug/plugin.hpp>
#include <cuplug/plugin_abi.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cuplug {

// How CUDA will use a registered resource: CUDA's CU_GRAPHICS_REGISTER_FLAGS_* values, combined
// with | (read_only and write_discard exclude each other; surface_load_store and texture_gather
// are for images only).
enum class interop_flags : unsigned {
  none = 0,
  read_only = 1,          // CUDA only reads it
  write_discard = 2,      // CUDA overwrites all of it and never reads it
  surface_load_store = 4, // an image CUDA binds as a surface
  texture_gather = 8,     // an image CUDA uses for texture gather
};
static_assert(static_cast<unsigned>(interop_flags::read_only) ==
                      CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY &&
                  static_cast<unsigned>(interop_flags::write_discard) ==
                      CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD &&
                  static_cast<unsigned>(interop_flags::surface_load_store) ==
                      CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST &&
                  static_cast<unsigned>(interop_flags::texture_gather) ==
                      CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER,
              "interop_flags are passed to the driver as they are");
constexpr interop_flags operator|(interop_flags a, interop_flags b) noexcept {
  return static_cast<interop_flags>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr interop_flags operator&(interop_flags a, interop_flags b) noexcept {
  return static_cast<interop_flags>(static_cast<unsigned>(a) & static_cast<unsigned>(b));
}
constexpr interop_flags &operator|=(interop_flags &a, interop_flags b) noexcept {
  return a = a | b;
}
constexpr interop_flags &operator&=(interop_flags &a, interop_flags b) noexcept {
  return a = a & b;
}
// Whether any of `which` is set in `flags`.
constexpr bool has_any(interop_flags flags, interop_flags which) noexcept {
  return (flags & which) != interop_flags::none;
}

// The GL targets an image can be registered with (GLenum values, so that the core needs no GL
// header): the ones cuGraphicsGLRegisterImage accepts.
enum class gl_image_target : std::uint32_t {
  texture_2d = 0x0DE1,        // GL_TEXTURE_2D
  texture_rectangle = 0x84F5, // GL_TEXTURE_RECTANGLE
  texture_cube_map = 0x8513,  // GL_TEXTURE_CUBE_MAP
  texture_3d = 0x806F,        // GL_TEXTURE_3D
  texture_2d_array = 0x8C1A,  // GL_TEXTURE_2D_ARRAY
  renderbuffer = 0x8D41,      // GL_RENDERBUFFER
};
const char *to_string(gl_image_target target) noexcept; // "GL_TEXTURE_2D"; "unknown" otherwise

// A GL texture or renderbuffer: its target and its name (the GLuint glGen* gave).
struct gl_image {
  gl_image_target target = gl_image_target::texture_2d;
  std::uint32_t name = 0;
};

// Where a mapped buffer is, for CUDA work on the stream it was mapped on.
struct mapped_buffer {
  device_ptr ptr = 0;
  std::size_t bytes = 0;
};

// Resources are the driver's CUgraphicsResource, made by register_buffer / register_image in the
// current context (with the GL context current on the calling thread) and released by
// unregister. map() makes resources visible to CUDA work on `stream` (GL must not touch them
// until unmap()); while mapped, a buffer has a device address (mapped_pointer) and an image a
// CUDA array per array index (cube face or layer) and mip level (mapped_array). The doors check
// their arguments and throw std::invalid_argument naming the problem; anything a plugin throws
// that is not a cuplug::error arrives as plugin_error naming the backend and the call.
class CUPLUG_API interop : public plugin_object {
public:
  void initialize();
  // Registers GL buffer object `gl_buffer` (not 0); flags: none, read_only or write_discard.
  [[nodiscard]] CUgraphicsResource register_buffer(std::uint32_t gl_buffer,
                                                   interop_flags flags = interop_flags::none);
  // Registers a GL texture or renderbuffer (name not 0).
  [[nodiscard]] CUgraphicsResource register_image(const gl_image &image,
                                                  interop_flags flags = interop_flags::none);
  // Never throws (it runs in destructors): a failure is reported once on stderr. 0 does nothing.
  void unregister(CUgraphicsResource resource) noexcept;

  // Maps / unmaps all of `resources` at once (cheaper than one by one), ordered on `stream`.
  // None may be null or listed twice; an empty list does nothing.
  void map(const std::vector<CUgraphicsResource> &resources, CUstream stream = nullptr);
  void unmap(const std::vector<CUgraphicsResource> &resources, CUstream stream = nullptr);
  void map(CUgraphicsResource resource, CUstream stream = nullptr) {
    map(std::vector<CUgraphicsResource>{resource}, stream);
  }
  void unmap(CUgraphicsResource resource, CUstream stream = nullptr) {
    unmap(std::vector<CUgraphicsResource>{resource}, stream);
  }

  // The device address and size of a mapped buffer.
  [[nodiscard]] mapped_buffer mapped_pointer(CUgraphicsResource resource);
  // The CUDA array of a mapped image at `array_index` (cube map face or array layer) and mip
  // level `mip_level`.
  [[nodiscard]] CUarray mapped_array(CUgraphicsResource resource, unsigned array_index = 0,
                                     unsigned mip_level = 0);

private:
  virtual void do_initialize() = 0;
  virtual CUgraphicsResource do_register_buffer(std::uint32_t gl_buffer, interop_flags flags) = 0;
  virtual CUgraphicsResource do_register_image(const gl_image &image, interop_flags flags) = 0;
  virtual void do_unregister(CUgraphicsResource resource) = 0;
  // `resources` holds `count` (at least one) distinct, non-null resources.
  virtual void do_map(const CUgraphicsResource *resources, std::size_t count, CUstream stream) = 0;
  virtual void do_unmap(const CUgraphicsResource *resources, std::size_t count,
                        CUstream stream) = 0;
  virtual mapped_buffer do_mapped_pointer(CUgraphicsResource resource) = 0;
  virtual CUarray do_mapped_array(CUgraphicsResource resource, unsigned array_index,
                                  unsigned mip_level) = 0;
};

} // namespace cuplug
