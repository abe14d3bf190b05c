// Draws an RGBA image held in a GL buffer straight from that buffer, filling the viewport: a buffer
// texture read by a fragment shader, so a frame a kernel wrote into a mapped pixel buffer is shown
// without GL first copying it into a texture (on an H200 that copy costs a third of an interop
// frame: docs/benchmarks.md). Needs GL 3.1 (buffer textures, GLSL 1.40); where the context lacks
// it, available() is false and why() says so, and the caller copies into a texture instead.
#pragma once

#include <string>

namespace cuplug::gl {

class buffer_image {
public:
  // Compiles the shader on first use, in the GL context current then (the owner's).
  bool available();
  const std::string &why() const noexcept { return why_; }
  // Whether an image of `texels` RGBA texels fits one buffer texture (GL_MAX_TEXTURE_BUFFER_SIZE).
  bool fits(long long texels) const noexcept { return texels <= max_texels_; }
  // Draws `width` x `height` RGBA texels of `buffer` (normalised uint8, or float32), row 0 at the
  // top, scaled (nearest) to the current viewport. Leaves no program, texture or vertex array
  // bound. Needs available().
  void draw(unsigned buffer, int width, int height, bool float32);
  // Deletes its GL objects; the owner's context must be current.
  void release() noexcept;

private:
  bool tried_ = false;
  std::string why_;
  unsigned program_ = 0, texture_ = 0, vertex_array_ = 0;
  int size_location_ = -1, viewport_location_ = -1;
  long long max_texels_ = 0;
};

} // namespace cuplug::gl
