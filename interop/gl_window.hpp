// A GL context with something to draw into: a GLFW window, or a headless EGL context (no
// display), plus the few GL calls cuplug.gl.Window needs (buffers, textures, drawing, reading
// pixels back). GLFW, EGL and GL are loaded at run time (gl_api.hpp): nothing of them is linked.
#pragma once

#include "gl_buffer_image.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cuplug::gl {

// Anything GL, GLFW or EGL refused; what() names the call and the fix.
class gl_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Whether this machine has the library a window (libglfw.so.3) and a headless context
// (libEGL.so.1) need: "" where it loads, else why not, naming the library and its Debian/Ubuntu
// package (for cuplug.gl.window_support() and `python -m cuplug info`). Defined in gl_api.cpp.
std::string glfw_unavailable();
std::string egl_unavailable();
// Load libglfw.so.3 / libEGL.so.1 and their entry points, once per process (thread-safe); throw
// gl_error naming the library, the Debian/Ubuntu package that provides it and dlopen's reason
// where they cannot. A gl_window loads what it needs itself. The names can be replaced (a path or
// another soname) by CUPLUG_GLFW_LIBRARY, CUPLUG_EGL_LIBRARY and CUPLUG_OPENGL_LIBRARY.
void load_glfw();
void load_egl();

// The largest width or height of a window or headless framebuffer: GL_MAX_TEXTURE_SIZE and
// GL_MAX_RENDERBUFFER_SIZE of NVIDIA's drivers (the framebuffer is one texture). Checked before
// any GL call, so a size out of range never reaches GLFW, EGL or GL.
inline constexpr int max_window_side = 32768;

struct window_options {
  int width = 640, height = 480; // 1 to max_window_side each
  std::string title = "cuplug";
  bool headless = false; // an EGL context and an offscreen framebuffer, no window
  bool visible = true;   // windowed only: false opens the window hidden
  bool vsync = false;    // windowed only: swap on the display's refresh
  int cuda_device = -1;  // headless only: prefer the EGL device of this CUDA ordinal
};

struct key_event {
  int key = 0, scancode = 0, action = 0, mods = 0; // GLFW's values (GLFW_PRESS = 1, ...)
};

// Drawing happens in an offscreen framebuffer of the window's size, so that headless and windowed
// rendering and reading pixels back are the same code; present() shows it (windowed) or finishes
// it (headless). Every call makes this context current first. Not thread-safe; GL objects belong
// to this context and are deleted with it.
class gl_window {
public:
  explicit gl_window(const window_options &options); // throws gl_error with the reason
  ~gl_window();
  gl_window(const gl_window &) = delete;
  gl_window &operator=(const gl_window &) = delete;

  void make_current();
  bool headless() const noexcept { return headless_; }
  int width() const noexcept { return width_; }
  int height() const noexcept { return height_; }
  std::string describe(); // "GL 4.5 (...) / renderer / vendor, headless EGL (device ...)"

  // Buffer objects (target GL_ARRAY_BUFFER or GL_PIXEL_UNPACK_BUFFER), zero-filled.
  unsigned create_buffer(std::size_t bytes);
  void write_buffer(unsigned buffer, std::size_t offset, const void *data, std::size_t bytes);
  void read_buffer(unsigned buffer, std::size_t offset, void *out, std::size_t bytes);
  std::size_t buffer_size(unsigned buffer);
  void delete_buffer(unsigned buffer) noexcept;

  // RGBA 8-bit (float32 = false) or RGBA float32 2D textures, nearest filtering.
  unsigned create_texture(int width, int height, bool float32 = false);
  void texture_from_buffer(unsigned texture, unsigned pixel_buffer, int width, int height,
                           bool float32 = false); // GL copies from a PBO: no host round trip
  void texture_from_host(unsigned texture, const void *pixels, int width, int height,
                         bool float32 = false);
  void delete_texture(unsigned texture) noexcept;
  // Draws the `width` x `height` RGBA image in `pixel_buffer` into the whole framebuffer straight
  // from the buffer (no copy into a texture) and returns true; returns false, drawing nothing,
  // where this context cannot (no GL 3.1, or the image exceeds a buffer texture): then copy it with
  // texture_from_buffer and draw_texture.
  bool draw_buffer_image(unsigned pixel_buffer, int width, int height, bool float32 = false);

  // Drawing into the framebuffer. mode: GL_POINTS, GL_LINES, GL_LINE_STRIP, GL_TRIANGLES, ...
  void clear(float r, float g, float b, float a);
  void draw_texture(unsigned texture); // fills the framebuffer
  // `count` vertices of `components` float32 each from `buffer`; colours from `color_buffer` (4
  // uint8 per vertex) when not 0, else `rgba`; positions transformed by the column-major 4x4
  // `transform` when given (else taken as normalised device coordinates).
  void draw_vertices(unsigned buffer, std::size_t count, int components, unsigned mode,
                     const float rgba[4], unsigned color_buffer, float point_size,
                     const float *transform);
  // The framebuffer as RGBA8, top row first: width() * height() * 4 bytes.
  void read_pixels(void *out);
  void present();
  void finish();

  // Windows (no-ops headless): events, close requests, size changes.
  void poll_events();
  bool should_close();
  void set_should_close(bool value);
  std::vector<key_event> take_key_events();
  bool take_resized(); // the window changed size since the last call (width()/height() follow)
  void set_title(const std::string &title);

private:
  void resize_framebuffer(int width, int height);
  void check_gl(const char *call);

  bool headless_ = false;
  int width_ = 0, height_ = 0;
  void *window_ = nullptr;      // GLFWwindow
  void *egl_display_ = nullptr; // EGLDisplay
  void *egl_context_ = nullptr; // EGLContext
  std::string egl_device_;
  unsigned framebuffer_ = 0, color_ = 0;
  std::vector<key_event> keys_;
  buffer_image buffer_image_;
  bool resized_ = false;

  friend struct gl_window_callbacks;
};

} // namespace cuplug::gl
