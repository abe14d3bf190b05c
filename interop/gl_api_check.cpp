// A compile-time check, no code: every type, signature and constant gl_api.hpp writes out is the
// one of the system's Khronos and GLFW headers. Built where those headers are installed (CI
// installs them: tools/ensure_deps.sh), so a wrong signature or value fails the build there
// instead of corrupting a call at run time where only the libraries exist.
#include "gl_api.hpp" // first: its constants are declared before the headers' macros exist

#define GL_GLEXT_PROTOTYPES 1
#define EGL_EGLEXT_PROTOTYPES 1
#define GLFW_INCLUDE_NONE 1
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/gl.h>
#include <GL/glext.h>
#include <GLFW/glfw3.h>

#include <type_traits>

namespace {

#define CUPLUG_GL_CHECK_SIGNATURE(ret, name, params)                                               \
  static_assert(std::is_same_v<decltype(cuplug::gl::name), decltype(&::name)>,                     \
                "gl_api.hpp's " #name " is not the one of the system's headers");
CUPLUG_GL_REQUIRED(CUPLUG_GL_CHECK_SIGNATURE)
CUPLUG_GL_BUFFER_IMAGE(CUPLUG_GL_CHECK_SIGNATURE)
CUPLUG_EGL_FUNCTIONS(CUPLUG_GL_CHECK_SIGNATURE)
CUPLUG_EGL_EXTENSIONS(CUPLUG_GL_CHECK_SIGNATURE)
CUPLUG_GLFW_FUNCTIONS(CUPLUG_GL_CHECK_SIGNATURE)
#undef CUPLUG_GL_CHECK_SIGNATURE

// Here `name` is the header's macro, expanded; `value` is gl_api.hpp's.
#define CUPLUG_GL_CHECK_CONSTANT(name, value)                                                      \
  static_assert((name) == (value), "gl_api.hpp's " #name " is not the system headers' value");
CUPLUG_GL_CONSTANTS(CUPLUG_GL_CHECK_CONSTANT)
CUPLUG_EGL_CONSTANTS(CUPLUG_GL_CHECK_CONSTANT)
CUPLUG_GLFW_CONSTANTS(CUPLUG_GL_CHECK_CONSTANT)
#undef CUPLUG_GL_CHECK_CONSTANT

static_assert(std::is_same_v<EGLNativeDisplayType, void *>,
              "gl_api.hpp passes eglGetDisplay a void * (EGLNativeDisplayType on Linux)");

} // namespace
