// The drawing half of cuplug.gl.Window: GL objects (buffers, textures, the offscreen
// framebuffer) and the GL calls that draw into and read from that framebuffer. The context they
// run in (a GLFW window or a headless EGL context) is made and shown in gl_window.cpp.
#include "gl_api.hpp"
#include "gl_window.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace cuplug::gl {
namespace {

const char *gl_error_name(GLenum e) {
  switch (e) {
  case GL_INVALID_ENUM:
    return "GL_INVALID_ENUM";
  case GL_INVALID_VALUE:
    return "GL_INVALID_VALUE";
  case GL_INVALID_OPERATION:
    return "GL_INVALID_OPERATION";
  case GL_OUT_OF_MEMORY:
    return "GL_OUT_OF_MEMORY";
  case GL_INVALID_FRAMEBUFFER_OPERATION:
    return "GL_INVALID_FRAMEBUFFER_OPERATION";
  default:
    return "a GL error";
  }
}

} // namespace

void gl_window::check_gl(const char *call) {
  const GLenum e = glGetError();
  if (e != GL_NO_ERROR)
    throw gl_error(std::string(call) + " failed: " + gl_error_name(e));
}

void gl_window::resize_framebuffer(int width, int height) {
  make_current();
  if (!framebuffer_)
    glGenFramebuffers(1, &framebuffer_);
  if (color_)
    glDeleteTextures(1, &color_);
  color_ = create_texture(width, height);
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, color_, 0);
  const GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  if (status != GL_FRAMEBUFFER_COMPLETE)
    throw gl_error("the offscreen framebuffer is incomplete (status " + std::to_string(status) +
                   ")");
  width_ = width;
  height_ = height;
  glViewport(0, 0, width, height);
  check_gl("creating the framebuffer");
}

unsigned gl_window::create_buffer(std::size_t bytes) {
  if (bytes == 0)
    throw gl_error("create_buffer: a GL buffer needs at least one byte");
  make_current();
  GLuint b = 0;
  glGenBuffers(1, &b);
  glBindBuffer(GL_ARRAY_BUFFER, b);
  std::vector<unsigned char> zeros(bytes, 0);
  glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(bytes), zeros.data(), GL_DYNAMIC_DRAW);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  check_gl("glBufferData");
  return b;
}

std::size_t gl_window::buffer_size(unsigned buffer) {
  make_current();
  GLint64 size = 0;
  glBindBuffer(GL_ARRAY_BUFFER, buffer);
  glGetBufferParameteri64v(GL_ARRAY_BUFFER, GL_BUFFER_SIZE, &size);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  check_gl("glGetBufferParameteri64v");
  return static_cast<std::size_t>(size);
}

void gl_window::write_buffer(unsigned buffer, std::size_t offset, const void *data,
                             std::size_t bytes) {
  if (offset + bytes > buffer_size(buffer))
    throw gl_error("write_buffer: bytes [" + std::to_string(offset) + ", " +
                   std::to_string(offset + bytes) + ") do not fit GL buffer " +
                   std::to_string(buffer) + " of " + std::to_string(buffer_size(buffer)));
  glBindBuffer(GL_ARRAY_BUFFER, buffer);
  glBufferSubData(GL_ARRAY_BUFFER, static_cast<GLintptr>(offset), static_cast<GLsizeiptr>(bytes),
                  data);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  check_gl("glBufferSubData");
}

void gl_window::read_buffer(unsigned buffer, std::size_t offset, void *out, std::size_t bytes) {
  if (offset + bytes > buffer_size(buffer))
    throw gl_error("read_buffer: bytes [" + std::to_string(offset) + ", " +
                   std::to_string(offset + bytes) + ") are not in GL buffer " +
                   std::to_string(buffer) + " of " + std::to_string(buffer_size(buffer)));
  glBindBuffer(GL_ARRAY_BUFFER, buffer);
  glGetBufferSubData(GL_ARRAY_BUFFER, static_cast<GLintptr>(offset), static_cast<GLsizeiptr>(bytes),
                     out);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  check_gl("glGetBufferSubData");
}

void gl_window::delete_buffer(unsigned buffer) noexcept {
  try {
    make_current();
    glDeleteBuffers(1, &buffer);
  } catch (...) {
  }
}

unsigned gl_window::create_texture(int width, int height, bool float32) {
  make_current();
  GLuint t = 0;
  glGenTextures(1, &t);
  glBindTexture(GL_TEXTURE_2D, t);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glTexImage2D(GL_TEXTURE_2D, 0, float32 ? GL_RGBA32F : GL_RGBA8, width, height, 0, GL_RGBA,
               float32 ? GL_FLOAT : GL_UNSIGNED_BYTE, nullptr);
  glBindTexture(GL_TEXTURE_2D, 0);
  check_gl("glTexImage2D");
  return t;
}

void gl_window::texture_from_buffer(unsigned texture, unsigned pixel_buffer, int width, int height,
                                    bool float32) {
  make_current();
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, pixel_buffer);
  glBindTexture(GL_TEXTURE_2D, texture);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RGBA,
                  float32 ? GL_FLOAT : GL_UNSIGNED_BYTE, nullptr);
  glBindTexture(GL_TEXTURE_2D, 0);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
  check_gl("glTexSubImage2D from a pixel buffer");
}

void gl_window::texture_from_host(unsigned texture, const void *pixels, int width, int height,
                                  bool float32) {
  make_current();
  glBindTexture(GL_TEXTURE_2D, texture);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RGBA,
                  float32 ? GL_FLOAT : GL_UNSIGNED_BYTE, pixels);
  glBindTexture(GL_TEXTURE_2D, 0);
  check_gl("glTexSubImage2D from host memory");
}

bool gl_window::draw_buffer_image(unsigned pixel_buffer, int width, int height, bool float32) {
  if (width <= 0 || height <= 0)
    throw gl_error("draw_buffer_image: an image of " + std::to_string(width) + "x" +
                   std::to_string(height) + " texels; width and height must be positive");
  make_current();
  if (!buffer_image_.available() ||
      !buffer_image_.fits(static_cast<long long>(width) * static_cast<long long>(height)))
    return false;
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glViewport(0, 0, width_, height_);
  buffer_image_.draw(pixel_buffer, width, height, float32);
  check_gl("drawing an image from a pixel buffer");
  return true;
}

void gl_window::delete_texture(unsigned texture) noexcept {
  try {
    make_current();
    glDeleteTextures(1, &texture);
  } catch (...) {
  }
}

void gl_window::clear(float r, float g, float b, float a) {
  make_current();
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glViewport(0, 0, width_, height_);
  glClearColor(r, g, b, a);
  glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
  check_gl("glClear");
}

void gl_window::draw_texture(unsigned texture) {
  make_current();
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glMatrixMode(GL_PROJECTION);
  glLoadIdentity();
  glMatrixMode(GL_MODELVIEW);
  glLoadIdentity();
  glEnable(GL_TEXTURE_2D);
  glBindTexture(GL_TEXTURE_2D, texture);
  glTexEnvi(GL_TEXTURE_ENV, GL_TEXTURE_ENV_MODE, GL_REPLACE);
  // Texture row 0 (the first row kernels write) at the top of the picture.
  glBegin(GL_QUADS);
  glTexCoord2f(0, 1);
  glVertex2f(-1, -1);
  glTexCoord2f(1, 1);
  glVertex2f(1, -1);
  glTexCoord2f(1, 0);
  glVertex2f(1, 1);
  glTexCoord2f(0, 0);
  glVertex2f(-1, 1);
  glEnd();
  glBindTexture(GL_TEXTURE_2D, 0);
  glDisable(GL_TEXTURE_2D);
  check_gl("drawing a texture");
}

void gl_window::draw_vertices(unsigned buffer, std::size_t count, int components, unsigned mode,
                              const float rgba[4], unsigned color_buffer, float point_size,
                              const float *transform) {
  if (components < 2 || components > 4)
    throw gl_error("draw_vertices: " + std::to_string(components) +
                   " components per vertex; use 2, 3 or 4 float32 values");
  make_current();
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glMatrixMode(GL_PROJECTION);
  glLoadIdentity();
  glMatrixMode(GL_MODELVIEW);
  if (transform)
    glLoadMatrixf(transform);
  else
    glLoadIdentity();
  glPointSize(point_size);
  glBindBuffer(GL_ARRAY_BUFFER, buffer);
  glEnableClientState(GL_VERTEX_ARRAY);
  glVertexPointer(components, GL_FLOAT, 0, nullptr);
  if (color_buffer) {
    glBindBuffer(GL_ARRAY_BUFFER, color_buffer);
    glEnableClientState(GL_COLOR_ARRAY);
    glColorPointer(4, GL_UNSIGNED_BYTE, 0, nullptr);
  } else {
    glColor4f(rgba[0], rgba[1], rgba[2], rgba[3]);
  }
  glDrawArrays(mode, 0, static_cast<GLsizei>(count));
  glDisableClientState(GL_COLOR_ARRAY);
  glDisableClientState(GL_VERTEX_ARRAY);
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  glLoadIdentity();
  glColor4f(1, 1, 1, 1);
  check_gl("glDrawArrays");
}

void gl_window::read_pixels(void *out) {
  make_current();
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  const std::size_t row = static_cast<std::size_t>(width_) * 4;
  std::vector<unsigned char> flipped(row * height_);
  glReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, flipped.data());
  check_gl("glReadPixels");
  // GL's rows go bottom up; images (and PNG files) top down.
  auto *dst = static_cast<unsigned char *>(out);
  for (int y = 0; y < height_; ++y)
    std::memcpy(dst + row * y, flipped.data() + row * (height_ - 1 - y), row);
}

void gl_window::finish() {
  make_current();
  glFinish();
}

} // namespace cuplug::gl
