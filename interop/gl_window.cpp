// GLFW windows and headless EGL contexts for cuplug.gl.Window, with GL through GLEW.
#include "gl_window.hpp"

#include <GL/glew.h>

#ifdef CUPLUG_GL_HAVE_GLFW
#include <GLFW/glfw3.h>
#endif
#ifdef CUPLUG_GL_HAVE_EGL
#include <EGL/egl.h>
#include <EGL/eglext.h>
#endif

#include <cstring>
#include <mutex>
#include <string>

namespace cuplug::gl {

build_support support() noexcept {
  build_support s;
#ifdef CUPLUG_GL_HAVE_GLFW
  s.windowed = true;
#endif
#ifdef CUPLUG_GL_HAVE_EGL
  s.headless = true;
#endif
#ifdef CUPLUG_GL_MISSING
  s.missing = CUPLUG_GL_MISSING;
#endif
  return s;
}

namespace {

// GLEW on a context: on an EGL context glewInit loads GL's functions and then fails with
// GLEW_ERROR_NO_GLX_DISPLAY (Debian's GLEW is built for GLX, and its GLX-extension step needs an
// X display); the GL functions it loaded are glvnd's dispatch stubs, which serve EGL contexts
// too (docs/dependencies.md).
void init_glew(bool egl) {
  glewExperimental =
      GL_TRUE; // core-profile entry points even where the extension string lacks them
  const GLenum r = glewInit();
  if (r != GLEW_OK && !(egl && r == GLEW_ERROR_NO_GLX_DISPLAY))
    throw gl_error(std::string("glewInit failed: ") +
                   reinterpret_cast<const char *>(glewGetErrorString(r)));
  while (glGetError() != GL_NO_ERROR) {
  } // glewInit may leave GL_INVALID_ENUM behind
  if (glGenFramebuffers == nullptr || glBlitFramebuffer == nullptr || glGenBuffers == nullptr)
    throw gl_error(std::string("the GL context (") +
                   reinterpret_cast<const char *>(glGetString(GL_VERSION)) +
                   ") lacks framebuffer objects; cuplug.gl needs OpenGL 3.0 or newer");
}

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

#ifdef CUPLUG_GL_HAVE_GLFW
std::mutex glfw_mutex;
std::string glfw_last_error;
void glfw_error(int code, const char *text) {
  glfw_last_error = "GLFW error " + std::to_string(code) + ": " + (text ? text : "");
}
void init_glfw() {
  static bool ok = false;
  if (ok)
    return;
  glfwSetErrorCallback(glfw_error);
  if (!glfwInit())
    throw gl_error("glfwInit failed (" + glfw_last_error +
                   "): no display? Set DISPLAY (or run under xvfb-run), or use headless=True");
  ok = true; // never terminated: windows may be destroyed during interpreter exit
}
#endif

#ifdef CUPLUG_GL_HAVE_EGL
std::string egl_error(const char *call) {
  char code[16];
  std::snprintf(code, sizeof code, "0x%x", eglGetError());
  return std::string(call) + " failed (EGL error " + code + ")";
}

// The EGL display to use: a device display (EGL_EXT_platform_device; NVIDIA's, for the CUDA
// device asked for when its driver says which that is), else Mesa's surfaceless platform, else
// the default display. `chosen` says which.
EGLDisplay open_egl_display(int cuda_device, std::string &chosen) {
  auto query_devices =
      reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(eglGetProcAddress("eglQueryDevicesEXT"));
  auto platform_display = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      eglGetProcAddress("eglGetPlatformDisplayEXT"));
  auto device_attrib = reinterpret_cast<PFNEGLQUERYDEVICEATTRIBEXTPROC>(
      eglGetProcAddress("eglQueryDeviceAttribEXT"));
  EGLint major = 0, minor = 0;
  if (query_devices && platform_display) {
    EGLDeviceEXT devices[16];
    EGLint count = 0;
    if (query_devices(16, devices, &count) && count > 0) {
      EGLDisplay fallback = EGL_NO_DISPLAY;
      for (EGLint i = 0; i < count; ++i) {
        EGLAttrib cuda = -1;
#ifdef EGL_CUDA_DEVICE_NV
        if (device_attrib && !device_attrib(devices[i], EGL_CUDA_DEVICE_NV, &cuda))
          cuda = -1;
#endif
        EGLDisplay d = platform_display(EGL_PLATFORM_DEVICE_EXT, devices[i], nullptr);
        if (d == EGL_NO_DISPLAY || !eglInitialize(d, &major, &minor))
          continue;
        if (cuda_device < 0 || cuda == cuda_device) {
          chosen = "EGL device " + std::to_string(i) +
                   (cuda >= 0 ? " (CUDA device " + std::to_string(cuda) + ")" : "");
          return d;
        }
        if (fallback == EGL_NO_DISPLAY) {
          fallback = d;
          chosen = "EGL device " + std::to_string(i);
        }
      }
      if (fallback != EGL_NO_DISPLAY)
        return fallback;
    }
  }
#ifdef EGL_PLATFORM_SURFACELESS_MESA
  if (platform_display) {
    EGLDisplay d = platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
    if (d != EGL_NO_DISPLAY && eglInitialize(d, &major, &minor)) {
      chosen = "EGL surfaceless platform";
      return d;
    }
  }
#endif
  EGLDisplay d = eglGetDisplay(EGL_DEFAULT_DISPLAY);
  if (d != EGL_NO_DISPLAY && eglInitialize(d, &major, &minor)) {
    chosen = "EGL default display";
    return d;
  }
  throw gl_error(egl_error("eglInitialize") +
                 ": no EGL display (no EGL vendor library found: with glvnd, NVIDIA's is listed "
                 "by __EGL_VENDOR_LIBRARY_FILENAMES=.../10_nvidia.json; Mesa's by "
                 "libegl-mesa0)");
}
#endif

} // namespace

// GLFW calls back with the window only: the gl_window is its user pointer.
struct gl_window_callbacks {
#ifdef CUPLUG_GL_HAVE_GLFW
  static gl_window *of(GLFWwindow *w) {
    return static_cast<gl_window *>(glfwGetWindowUserPointer(w));
  }
  static void key(GLFWwindow *w, int key, int scancode, int action, int mods) {
    of(w)->keys_.push_back({key, scancode, action, mods});
  }
  static void size(GLFWwindow *w, int width, int height) {
    if (width > 0 && height > 0)
      of(w)->resized_ = true;
  }
#endif
};

gl_window::gl_window(const window_options &o) : headless_(o.headless) {
  if (o.width <= 0 || o.height <= 0 || o.width > max_window_side || o.height > max_window_side)
    throw gl_error("a window of " + std::to_string(o.width) + "x" + std::to_string(o.height) +
                   " pixels: width and height must be from 1 to " +
                   std::to_string(max_window_side));
  if (headless_) {
#ifdef CUPLUG_GL_HAVE_EGL
    EGLDisplay d = open_egl_display(o.cuda_device, egl_device_);
    egl_display_ = d;
    if (!eglBindAPI(EGL_OPENGL_API))
      throw gl_error(egl_error("eglBindAPI(EGL_OPENGL_API)") + ": this EGL has no desktop OpenGL");
    const EGLint attrs[] = {EGL_SURFACE_TYPE,
                            EGL_PBUFFER_BIT,
                            EGL_RENDERABLE_TYPE,
                            EGL_OPENGL_BIT,
                            EGL_RED_SIZE,
                            8,
                            EGL_GREEN_SIZE,
                            8,
                            EGL_BLUE_SIZE,
                            8,
                            EGL_ALPHA_SIZE,
                            8,
                            EGL_NONE};
    EGLConfig config = nullptr;
    EGLint n = 0;
    if (!eglChooseConfig(d, attrs, &config, 1, &n) || n == 0)
      throw gl_error(egl_error("eglChooseConfig") + ": no RGBA8 OpenGL config on " + egl_device_);
    // No surface: drawing goes to the framebuffer object (EGL_KHR_surfaceless_context).
    EGLContext ctx = eglCreateContext(d, config, EGL_NO_CONTEXT, nullptr);
    if (ctx == EGL_NO_CONTEXT)
      throw gl_error(egl_error("eglCreateContext"));
    egl_context_ = ctx;
    if (!eglMakeCurrent(d, EGL_NO_SURFACE, EGL_NO_SURFACE, ctx))
      throw gl_error(egl_error("eglMakeCurrent") +
                     ": surfaceless contexts need EGL_KHR_surfaceless_context");
    init_glew(true);
#else
    throw gl_error("headless GL is not available: cuplug was built without EGL (" +
                   support().missing + ")");
#endif
  } else {
#ifdef CUPLUG_GL_HAVE_GLFW
    std::lock_guard<std::mutex> lock(glfw_mutex);
    init_glfw();
    glfwDefaultWindowHints();
    glfwWindowHint(GLFW_VISIBLE, o.visible ? GLFW_TRUE : GLFW_FALSE);
    glfwWindowHint(GLFW_CLIENT_API, GLFW_OPENGL_API);
    GLFWwindow *w = glfwCreateWindow(o.width, o.height, o.title.c_str(), nullptr, nullptr);
    if (w == nullptr)
      throw gl_error("glfwCreateWindow failed (" + glfw_last_error +
                     "); without a display use headless=True (EGL)");
    window_ = w;
    glfwSetWindowUserPointer(w, this);
    glfwSetKeyCallback(w, gl_window_callbacks::key);
    glfwSetFramebufferSizeCallback(w, gl_window_callbacks::size);
    glfwMakeContextCurrent(w);
    glfwSwapInterval(o.vsync ? 1 : 0);
    init_glew(false);
#else
    throw gl_error("windows are not available: cuplug was built without GLFW (" +
                   support().missing + "); headless=True uses EGL");
#endif
  }
  resize_framebuffer(o.width, o.height);
}

gl_window::~gl_window() {
  try {
    make_current();
    buffer_image_.release();
    if (framebuffer_)
      glDeleteFramebuffers(1, &framebuffer_);
    if (color_)
      glDeleteTextures(1, &color_);
  } catch (...) {
  }
#ifdef CUPLUG_GL_HAVE_GLFW
  if (window_)
    glfwDestroyWindow(static_cast<GLFWwindow *>(window_));
#endif
#ifdef CUPLUG_GL_HAVE_EGL
  if (egl_context_) {
    eglMakeCurrent(egl_display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(egl_display_, egl_context_);
  }
#endif
}

void gl_window::make_current() {
#ifdef CUPLUG_GL_HAVE_EGL
  if (egl_context_ && eglGetCurrentContext() != egl_context_ &&
      !eglMakeCurrent(egl_display_, EGL_NO_SURFACE, EGL_NO_SURFACE, egl_context_))
    throw gl_error(egl_error("eglMakeCurrent"));
#endif
#ifdef CUPLUG_GL_HAVE_GLFW
  if (window_ && glfwGetCurrentContext() != window_)
    glfwMakeContextCurrent(static_cast<GLFWwindow *>(window_));
#endif
}

void gl_window::check_gl(const char *call) {
  const GLenum e = glGetError();
  if (e != GL_NO_ERROR)
    throw gl_error(std::string(call) + " failed: " + gl_error_name(e));
}

std::string gl_window::describe() {
  make_current();
  auto str = [](GLenum what) {
    const GLubyte *s = glGetString(what);
    return s ? std::string(reinterpret_cast<const char *>(s)) : std::string("?");
  };
  return "OpenGL " + str(GL_VERSION) + ", " + str(GL_RENDERER) + " (" + str(GL_VENDOR) + "), " +
         (headless_ ? "headless, " + egl_device_ : std::string("GLFW window"));
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

void gl_window::present() {
  make_current();
#ifdef CUPLUG_GL_HAVE_GLFW
  if (window_) {
    auto *w = static_cast<GLFWwindow *>(window_);
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(w, &fw, &fh);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, framebuffer_);
    glBindFramebuffer(GL_DRAW_FRAMEBUFFER, 0);
    glBlitFramebuffer(0, 0, width_, height_, 0, 0, fw, fh, GL_COLOR_BUFFER_BIT, GL_NEAREST);
    glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
    check_gl("glBlitFramebuffer");
    glfwSwapBuffers(w);
    return;
  }
#endif
  glFlush();
}

void gl_window::poll_events() {
#ifdef CUPLUG_GL_HAVE_GLFW
  if (window_) {
    glfwPollEvents();
    if (resized_) {
      int fw = 0, fh = 0;
      glfwGetFramebufferSize(static_cast<GLFWwindow *>(window_), &fw, &fh);
      if (fw > 0 && fh > 0 && (fw != width_ || fh != height_))
        resize_framebuffer(fw, fh);
      else
        resized_ = false;
    }
  }
#endif
}

bool gl_window::should_close() {
#ifdef CUPLUG_GL_HAVE_GLFW
  if (window_)
    return glfwWindowShouldClose(static_cast<GLFWwindow *>(window_));
#endif
  return false;
}

void gl_window::set_should_close(bool value) {
#ifdef CUPLUG_GL_HAVE_GLFW
  if (window_)
    glfwSetWindowShouldClose(static_cast<GLFWwindow *>(window_), value ? GLFW_TRUE : GLFW_FALSE);
#else
  (void)value;
#endif
}

std::vector<key_event> gl_window::take_key_events() {
  std::vector<key_event> out;
  out.swap(keys_);
  return out;
}

bool gl_window::take_resized() {
  const bool r = resized_;
  resized_ = false;
  return r;
}

void gl_window::set_title(const std::string &title) {
#ifdef CUPLUG_GL_HAVE_GLFW
  if (window_)
    glfwSetWindowTitle(static_cast<GLFWwindow *>(window_), title.c_str());
#else
  (void)title;
#endif
}

} // namespace cuplug::gl
