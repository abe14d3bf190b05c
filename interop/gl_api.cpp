// Loading the window helper's GL, EGL and GLFW entry points at run time (gl_api.hpp): dlopen and
// dlsym for GLFW and EGL, GetProcAddress for GL. Nothing here runs at import: the first Window
// of each kind loads what it needs, and a missing library is an error of that Window.
#include "gl_api.hpp"
#include "gl_window.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace cuplug::gl {

#define CUPLUG_GL_DEFINE_POINTER(ret, name, params) ret(*name) params = nullptr;
CUPLUG_GL_REQUIRED(CUPLUG_GL_DEFINE_POINTER)
CUPLUG_GL_BUFFER_IMAGE(CUPLUG_GL_DEFINE_POINTER)
CUPLUG_EGL_FUNCTIONS(CUPLUG_GL_DEFINE_POINTER)
CUPLUG_EGL_EXTENSIONS(CUPLUG_GL_DEFINE_POINTER)
CUPLUG_GLFW_FUNCTIONS(CUPLUG_GL_DEFINE_POINTER)
#undef CUPLUG_GL_DEFINE_POINTER

namespace {

std::mutex load_mutex;

// A library to dlopen: its default soname, the variable that replaces it, the Debian/Ubuntu
// package that provides it, and what cuplug.gl.Window needs it for.
struct library {
  const char *soname, *variable, *package, *purpose;
  void *handle = nullptr;
  std::string error; // why the last attempt failed
};

library glfw_library{"libglfw.so.3", "CUPLUG_GLFW_LIBRARY", "libglfw3",
                     "for a window (headless=True needs libEGL.so.1 of libegl1 instead)"};
library egl_library{"libEGL.so.1", "CUPLUG_EGL_LIBRARY", "libegl1",
                    "for headless=True (and an EGL vendor library: NVIDIA's driver, or Mesa's "
                    "libegl-mesa0)"};
library opengl_library{"libOpenGL.so.0", "CUPLUG_OPENGL_LIBRARY", "libopengl0",
                       "for GL functions its context does not give by name"};
library libgl_library{"libGL.so.1", "CUPLUG_OPENGL_LIBRARY", "libgl1",
                      "for GL functions its context does not give by name"};

// The name to open: the variable's value where it is set and not empty, else the soname.
std::string name_of(const library &l) {
  const char *v = std::getenv(l.variable);
  return v && *v ? std::string(v) : std::string(l.soname);
}

// "libglfw.so.3 (Debian/Ubuntu: libglfw3)", with the variable where it replaced the name.
std::string described(const library &l) {
  const std::string name = name_of(l);
  std::string text = std::string(l.soname) + " (Debian/Ubuntu: " + l.package + ")";
  if (name != l.soname)
    text += ", here " + std::string(l.variable) + "=" + name;
  return text;
}

// Opens `l` once (a failure is tried again next time); the caller holds load_mutex.
bool open_library(library &l) {
  if (l.handle)
    return true;
  dlerror();
  l.handle = dlopen(name_of(l).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!l.handle) {
    const char *e = dlerror();
    l.error = e ? e : "dlopen failed";
  }
  return l.handle != nullptr;
}

std::string open_error(const library &l) {
  return "cuplug.gl.Window needs " + described(l) + " " + l.purpose + ": " + l.error;
}

// dlsym's result as the pointer type of `target`.
template <class F> bool bind_symbol(void *handle, const char *name, F &target) {
  target = reinterpret_cast<F>(dlsym(handle, name));
  return target != nullptr;
}

// Opens `l` and binds every entry point of `group`; the caller holds load_mutex.
template <class Bind> void load_library(library &l, bool &loaded, Bind bind_all) {
  if (loaded)
    return;
  if (!open_library(l))
    throw gl_error(open_error(l));
  std::string missing;
  bind_all(l.handle, missing);
  if (!missing.empty())
    throw gl_error("cuplug.gl.Window: " + name_of(l) + " lacks" + missing + " (" + described(l) +
                   " is what it needs)");
  loaded = true;
}

bool glfw_loaded = false, egl_loaded = false;

} // namespace

#define CUPLUG_GL_BIND(ret, name, params)                                                          \
  if (!bind_symbol(h, #name, name))                                                                \
    missing += " " #name;

void load_glfw() {
  std::lock_guard<std::mutex> lock(load_mutex);
  load_library(glfw_library, glfw_loaded,
               [](void *h, std::string &missing) { CUPLUG_GLFW_FUNCTIONS(CUPLUG_GL_BIND) });
}

void load_egl() {
  std::lock_guard<std::mutex> lock(load_mutex);
  load_library(egl_library, egl_loaded, [](void *h, std::string &missing) {
    CUPLUG_EGL_FUNCTIONS(CUPLUG_GL_BIND)
    if (missing.empty()) { // extensions: null where this EGL lacks them
#define CUPLUG_GL_EXTENSION(ret, name, params)                                                     \
  name = reinterpret_cast<decltype(name)>(eglGetProcAddress(#name));
      CUPLUG_EGL_EXTENSIONS(CUPLUG_GL_EXTENSION)
#undef CUPLUG_GL_EXTENSION
    }
  });
}
#undef CUPLUG_GL_BIND

std::string glfw_unavailable() {
  std::lock_guard<std::mutex> lock(load_mutex);
  return open_library(glfw_library) ? std::string() : open_error(glfw_library);
}

std::string egl_unavailable() {
  std::lock_guard<std::mutex> lock(load_mutex);
  return open_library(egl_library) ? std::string() : open_error(egl_library);
}

void load_gl(GLFWglproc (*get_proc)(const char *), const char *through) {
  std::lock_guard<std::mutex> lock(load_mutex);
  // Any name `get_proc` does not give comes from glvnd's libOpenGL.so.0, else libGL.so.1 (GL 1.x
  // functions need not be given by name: EGL before 1.5 without
  // EGL_KHR_get_all_proc_addresses).
  auto fallback = [](const char *name) -> void * {
    for (library *l : {&opengl_library, &libgl_library})
      if (open_library(*l))
        if (void *p = dlsym(l->handle, name))
          return p;
    return nullptr;
  };
  std::string missing;
#define CUPLUG_GL_FETCH(ret, name, params)                                                         \
  name = reinterpret_cast<decltype(name)>(get_proc(#name));                                        \
  if (!name)                                                                                       \
    name = reinterpret_cast<decltype(name)>(fallback(#name));
#define CUPLUG_GL_FETCH_REQUIRED(ret, name, params)                                                \
  CUPLUG_GL_FETCH(ret, name, params)                                                               \
  if (!name)                                                                                       \
    missing += " " #name;
  CUPLUG_GL_REQUIRED(CUPLUG_GL_FETCH_REQUIRED)
  CUPLUG_GL_BUFFER_IMAGE(CUPLUG_GL_FETCH)
#undef CUPLUG_GL_FETCH_REQUIRED
#undef CUPLUG_GL_FETCH
  if (!missing.empty()) {
    std::string libraries;
    for (library *l : {&opengl_library, &libgl_library})
      libraries += "; " + described(*l) + (l->handle ? "" : ": " + l->error);
    throw gl_error("cuplug.gl.Window: GL entry points not found through " + std::string(through) +
                   " nor in libOpenGL.so.0 / libGL.so.1:" + missing + libraries);
  }
}

int gl_version() {
  const GLubyte *s = glGetString ? glGetString(GL_VERSION) : nullptr;
  int major = 0, minor = 0;
  // "4.6 (Compatibility Profile) Mesa ...", "4.6.0 NVIDIA ...": the first two numbers.
  if (!s || std::sscanf(reinterpret_cast<const char *>(s), "%d.%d", &major, &minor) != 2)
    return 0;
  return major * 10 + minor;
}

} // namespace cuplug::gl
