// The context half of cuplug.gl.Window: GLFW windows and headless EGL contexts, with GL's entry
// points loaded at run time (gl_api.hpp): making them current, showing the framebuffer, events
// and closing. What is drawn, and the GL objects it is drawn with, are in gl_drawing.cpp.
#include "gl_window.hpp"
#include "gl_api.hpp"

#include <cstdio>
#include <mutex>
#include <string>

namespace cuplug::gl {

namespace {

// GL's entry points for the context just made current, and the version cuplug.gl needs.
void init_gl(GLFWglproc (*get_proc)(const char *), const char *through) {
  load_gl(get_proc, through);
  while (glGetError() != GL_NO_ERROR) {
  } // a context may start with an error set
  if (gl_version() < 30) {
    const GLubyte *v = glGetString(GL_VERSION);
    throw gl_error(std::string("the GL context (") +
                   (v ? reinterpret_cast<const char *>(v) : "no GL_VERSION") +
                   ") lacks framebuffer objects; cuplug.gl needs OpenGL 3.0 or newer");
  }
}

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

std::string egl_error(const char *call) {
  char code[16];
  std::snprintf(code, sizeof code, "0x%x", eglGetError());
  return std::string(call) + " failed (EGL error " + code + ")";
}

// The EGL display to use: a device display (EGL_EXT_platform_device; NVIDIA's, for the CUDA
// device asked for when its driver says which that is), else Mesa's surfaceless platform, else
// the default display. `chosen` says which.
EGLDisplay open_egl_display(int cuda_device, std::string &chosen) {
  // Extensions: null where this EGL lacks them (load_egl).
  auto query_devices = eglQueryDevicesEXT;
  auto platform_display = eglGetPlatformDisplayEXT;
  auto device_attrib = eglQueryDeviceAttribEXT;
  EGLint major = 0, minor = 0;
  if (query_devices && platform_display) {
    EGLDeviceEXT devices[16];
    EGLint count = 0;
    if (query_devices(16, devices, &count) && count > 0) {
      EGLDisplay fallback = EGL_NO_DISPLAY;
      for (EGLint i = 0; i < count; ++i) {
        EGLAttrib cuda = -1;
        if (device_attrib && !device_attrib(devices[i], EGL_CUDA_DEVICE_NV, &cuda))
          cuda = -1;
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
  if (platform_display) {
    EGLDisplay d = platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
    if (d != EGL_NO_DISPLAY && eglInitialize(d, &major, &minor)) {
      chosen = "EGL surfaceless platform";
      return d;
    }
  }
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

} // namespace

// GLFW calls back with the window only: the gl_window is its user pointer.
struct gl_window_callbacks {
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
};

gl_window::gl_window(const window_options &o) : headless_(o.headless) {
  if (o.width <= 0 || o.height <= 0 || o.width > max_window_side || o.height > max_window_side)
    throw gl_error("a window of " + std::to_string(o.width) + "x" + std::to_string(o.height) +
                   " pixels: width and height must be from 1 to " +
                   std::to_string(max_window_side));
  if (headless_) {
    load_egl();
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
    init_gl(eglGetProcAddress, "eglGetProcAddress");
  } else {
    load_glfw();
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
    init_gl(glfwGetProcAddress, "glfwGetProcAddress");
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
  if (window_)
    glfwDestroyWindow(static_cast<GLFWwindow *>(window_));
  if (egl_context_) {
    eglMakeCurrent(egl_display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(egl_display_, egl_context_);
  }
}

void gl_window::make_current() {
  if (egl_context_ && eglGetCurrentContext() != egl_context_ &&
      !eglMakeCurrent(egl_display_, EGL_NO_SURFACE, EGL_NO_SURFACE, egl_context_))
    throw gl_error(egl_error("eglMakeCurrent"));
  if (window_ && glfwGetCurrentContext() != window_)
    glfwMakeContextCurrent(static_cast<GLFWwindow *>(window_));
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

void gl_window::present() {
  make_current();
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
  glFlush();
}

void gl_window::poll_events() {
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
}

bool gl_window::should_close() {
  if (window_)
    return glfwWindowShouldClose(static_cast<GLFWwindow *>(window_));
  return false;
}

void gl_window::set_should_close(bool value) {
  if (window_)
    glfwSetWindowShouldClose(static_cast<GLFWwindow *>(window_), value ? GLFW_TRUE : GLFW_FALSE);
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
  if (window_)
    glfwSetWindowTitle(static_cast<GLFWwindow *>(window_), title.c_str());
}

} // namespace cuplug::gl
