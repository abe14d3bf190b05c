// The GL, EGL and GLFW entry points of cuplug.gl.Window, loaded at run time: GLFW and EGL with
// dlopen (libglfw.so.3, libEGL.so.1), GL's functions by name through glfwGetProcAddress or
// eglGetProcAddress (then libOpenGL.so.0 / libGL.so.1 for any they do not give). So the window
// helper links none of these libraries nor GLEW, a wheel can ship it, and building it needs none
// of their headers: the types, constants and signatures below are the Khronos registry's (GL, EGL)
// and GLFW 3.3's, written out for the calls the helper makes. gl_api_check.cpp compares every one
// with the system's headers where those are installed (CI), so a wrong one fails the build.
//
// The function pointers have the GL, EGL and GLFW names inside namespace cuplug::gl, so the
// helper's code reads like code against the headers. Types are global, as in those headers
// (repeating an identical typedef is allowed, so both can be seen by one file).
#pragma once

#include <cstdint>
#include <string>

typedef unsigned int GLenum;
typedef unsigned int GLbitfield;
typedef unsigned int GLuint;
typedef int GLint;
typedef int GLsizei;
typedef unsigned char GLboolean;
typedef unsigned char GLubyte;
typedef float GLfloat;
typedef char GLchar;
typedef signed long int GLsizeiptr; // khronos_ssize_t (LP64)
typedef signed long int GLintptr;   // khronos_intptr_t (LP64)
typedef std::int64_t GLint64;       // khronos_int64_t

typedef std::int32_t EGLint;
typedef unsigned int EGLBoolean;
typedef unsigned int EGLenum;
typedef std::intptr_t EGLAttrib;
typedef void *EGLDisplay;
typedef void *EGLConfig;
typedef void *EGLContext;
typedef void *EGLSurface;
typedef void *EGLDeviceEXT;

struct GLFWwindow;
struct GLFWmonitor;
typedef void (*GLFWglproc)(void);
typedef void (*GLFWerrorfun)(int error_code, const char *description);
typedef void (*GLFWkeyfun)(GLFWwindow *window, int key, int scancode, int action, int mods);
typedef void (*GLFWframebuffersizefun)(GLFWwindow *window, int width, int height);

// X(return type, name, (parameters)) for each entry point, in groups.
// GL 1.x to 3.2 (compatibility profile): what every context must give (a missing one is an error).
#define CUPLUG_GL_REQUIRED(X)                                                                      \
  X(void, glBegin, (GLenum mode))                                                                  \
  X(void, glBindBuffer, (GLenum target, GLuint buffer))                                            \
  X(void, glBindFramebuffer, (GLenum target, GLuint framebuffer))                                  \
  X(void, glBindTexture, (GLenum target, GLuint texture))                                          \
  X(void, glBlitFramebuffer,                                                                       \
    (GLint srcX0, GLint srcY0, GLint srcX1, GLint srcY1, GLint dstX0, GLint dstY0, GLint dstX1,    \
     GLint dstY1, GLbitfield mask, GLenum filter))                                                 \
  X(void, glBufferData, (GLenum target, GLsizeiptr size, const void *data, GLenum usage))          \
  X(void, glBufferSubData, (GLenum target, GLintptr offset, GLsizeiptr size, const void *data))    \
  X(GLenum, glCheckFramebufferStatus, (GLenum target))                                             \
  X(void, glClear, (GLbitfield mask))                                                              \
  X(void, glClearColor, (GLfloat red, GLfloat green, GLfloat blue, GLfloat alpha))                 \
  X(void, glColor4f, (GLfloat red, GLfloat green, GLfloat blue, GLfloat alpha))                    \
  X(void, glColorPointer, (GLint size, GLenum type, GLsizei stride, const void *pointer))          \
  X(void, glDeleteBuffers, (GLsizei n, const GLuint *buffers))                                     \
  X(void, glDeleteFramebuffers, (GLsizei n, const GLuint *framebuffers))                           \
  X(void, glDeleteTextures, (GLsizei n, const GLuint *textures))                                   \
  X(void, glDisable, (GLenum cap))                                                                 \
  X(void, glDisableClientState, (GLenum array))                                                    \
  X(void, glDrawArrays, (GLenum mode, GLint first, GLsizei count))                                 \
  X(void, glEnable, (GLenum cap))                                                                  \
  X(void, glEnableClientState, (GLenum array))                                                     \
  X(void, glEnd, (void))                                                                           \
  X(void, glFinish, (void))                                                                        \
  X(void, glFlush, (void))                                                                         \
  X(void, glFramebufferTexture2D,                                                                  \
    (GLenum target, GLenum attachment, GLenum textarget, GLuint texture, GLint level))             \
  X(void, glGenBuffers, (GLsizei n, GLuint * buffers))                                             \
  X(void, glGenFramebuffers, (GLsizei n, GLuint * framebuffers))                                   \
  X(void, glGenTextures, (GLsizei n, GLuint * textures))                                           \
  X(void, glGetBufferParameteri64v, (GLenum target, GLenum pname, GLint64 * params))               \
  X(void, glGetBufferSubData, (GLenum target, GLintptr offset, GLsizeiptr size, void *data))       \
  X(GLenum, glGetError, (void))                                                                    \
  X(void, glGetIntegerv, (GLenum pname, GLint * data))                                             \
  X(const GLubyte *, glGetString, (GLenum name))                                                   \
  X(void, glLoadIdentity, (void))                                                                  \
  X(void, glLoadMatrixf, (const GLfloat *m))                                                       \
  X(void, glMatrixMode, (GLenum mode))                                                             \
  X(void, glPixelStorei, (GLenum pname, GLint param))                                              \
  X(void, glPointSize, (GLfloat size))                                                             \
  X(void, glReadPixels,                                                                            \
    (GLint x, GLint y, GLsizei width, GLsizei height, GLenum format, GLenum type, void *pixels))   \
  X(void, glTexCoord2f, (GLfloat s, GLfloat t))                                                    \
  X(void, glTexEnvi, (GLenum target, GLenum pname, GLint param))                                   \
  X(void, glTexImage2D,                                                                            \
    (GLenum target, GLint level, GLint internalformat, GLsizei width, GLsizei height,              \
     GLint border, GLenum format, GLenum type, const void *pixels))                                \
  X(void, glTexParameteri, (GLenum target, GLenum pname, GLint param))                             \
  X(void, glTexSubImage2D,                                                                         \
    (GLenum target, GLint level, GLint xoffset, GLint yoffset, GLsizei width, GLsizei height,      \
     GLenum format, GLenum type, const void *pixels))                                              \
  X(void, glVertex2f, (GLfloat x, GLfloat y))                                                      \
  X(void, glVertexPointer, (GLint size, GLenum type, GLsizei stride, const void *pointer))         \
  X(void, glViewport, (GLint x, GLint y, GLsizei width, GLsizei height))

// GL 2.0 to 3.1, for drawing an image straight from a buffer (gl_buffer_image.cpp): null where the
// context lacks them, and then that path is not taken.
#define CUPLUG_GL_BUFFER_IMAGE(X)                                                                  \
  X(void, glActiveTexture, (GLenum texture))                                                       \
  X(void, glAttachShader, (GLuint program, GLuint shader))                                         \
  X(void, glBindVertexArray, (GLuint array))                                                       \
  X(void, glCompileShader, (GLuint shader))                                                        \
  X(GLuint, glCreateProgram, (void))                                                               \
  X(GLuint, glCreateShader, (GLenum type))                                                         \
  X(void, glDeleteProgram, (GLuint program))                                                       \
  X(void, glDeleteShader, (GLuint shader))                                                         \
  X(void, glDeleteVertexArrays, (GLsizei n, const GLuint *arrays))                                 \
  X(void, glGenVertexArrays, (GLsizei n, GLuint * arrays))                                         \
  X(void, glGetProgramiv, (GLuint program, GLenum pname, GLint * params))                          \
  X(void, glGetShaderInfoLog,                                                                      \
    (GLuint shader, GLsizei bufSize, GLsizei * length, GLchar * infoLog))                          \
  X(void, glGetShaderiv, (GLuint shader, GLenum pname, GLint * params))                            \
  X(GLint, glGetUniformLocation, (GLuint program, const GLchar *name))                             \
  X(void, glLinkProgram, (GLuint program))                                                         \
  X(void, glShaderSource,                                                                          \
    (GLuint shader, GLsizei count, const GLchar *const *string, const GLint *length))              \
  X(void, glTexBuffer, (GLenum target, GLenum internalformat, GLuint buffer))                      \
  X(void, glUniform1i, (GLint location, GLint v0))                                                 \
  X(void, glUniform2f, (GLint location, GLfloat v0, GLfloat v1))                                   \
  X(void, glUniform2i, (GLint location, GLint v0, GLint v1))                                       \
  X(void, glUseProgram, (GLuint program))

// EGL 1.4 core, from libEGL.so.1 with dlsym.
#define CUPLUG_EGL_FUNCTIONS(X)                                                                    \
  X(EGLBoolean, eglBindAPI, (EGLenum api))                                                         \
  X(EGLBoolean, eglChooseConfig,                                                                   \
    (EGLDisplay dpy, const EGLint *attrib_list, EGLConfig *configs, EGLint config_size,            \
     EGLint *num_config))                                                                          \
  X(EGLContext, eglCreateContext,                                                                  \
    (EGLDisplay dpy, EGLConfig config, EGLContext share_context, const EGLint *attrib_list))       \
  X(EGLBoolean, eglDestroyContext, (EGLDisplay dpy, EGLContext ctx))                               \
  X(EGLContext, eglGetCurrentContext, (void))                                                      \
  X(EGLDisplay, eglGetDisplay, (void *display_id)) /* EGLNativeDisplayType: void * on Linux */     \
  X(EGLint, eglGetError, (void))                                                                   \
  X(GLFWglproc, eglGetProcAddress, (const char *procname)) /* returns void (*)(void) */            \
  X(EGLBoolean, eglInitialize, (EGLDisplay dpy, EGLint * major, EGLint * minor))                   \
  X(EGLBoolean, eglMakeCurrent, (EGLDisplay dpy, EGLSurface draw, EGLSurface read, EGLContext ctx))

// EGL extensions, through eglGetProcAddress (null where the EGL lacks them).
#define CUPLUG_EGL_EXTENSIONS(X)                                                                   \
  X(EGLBoolean, eglQueryDevicesEXT, (EGLint max_devices, EGLDeviceEXT * devices, EGLint * num))    \
  X(EGLDisplay, eglGetPlatformDisplayEXT,                                                          \
    (EGLenum platform, void *native_display, const EGLint *attrib_list))                           \
  X(EGLBoolean, eglQueryDeviceAttribEXT, (EGLDeviceEXT device, EGLint attribute, EGLAttrib * value))

// GLFW 3.3, from libglfw.so.3 with dlsym.
#define CUPLUG_GLFW_FUNCTIONS(X)                                                                   \
  X(GLFWwindow *, glfwCreateWindow,                                                                \
    (int width, int height, const char *title, GLFWmonitor *monitor, GLFWwindow *share))           \
  X(void, glfwDefaultWindowHints, (void))                                                          \
  X(void, glfwDestroyWindow, (GLFWwindow * window))                                                \
  X(GLFWwindow *, glfwGetCurrentContext, (void))                                                   \
  X(void, glfwGetFramebufferSize, (GLFWwindow * window, int *width, int *height))                  \
  X(GLFWglproc, glfwGetProcAddress, (const char *procname))                                        \
  X(void *, glfwGetWindowUserPointer, (GLFWwindow * window))                                       \
  X(int, glfwInit, (void))                                                                         \
  X(void, glfwMakeContextCurrent, (GLFWwindow * window))                                           \
  X(void, glfwPollEvents, (void))                                                                  \
  X(GLFWerrorfun, glfwSetErrorCallback, (GLFWerrorfun callback))                                   \
  X(GLFWframebuffersizefun, glfwSetFramebufferSizeCallback,                                        \
    (GLFWwindow * window, GLFWframebuffersizefun callback))                                        \
  X(GLFWkeyfun, glfwSetKeyCallback, (GLFWwindow * window, GLFWkeyfun callback))                    \
  X(void, glfwSetWindowShouldClose, (GLFWwindow * window, int value))                              \
  X(void, glfwSetWindowTitle, (GLFWwindow * window, const char *title))                            \
  X(void, glfwSetWindowUserPointer, (GLFWwindow * window, void *pointer))                          \
  X(void, glfwSwapBuffers, (GLFWwindow * window))                                                  \
  X(void, glfwSwapInterval, (int interval))                                                        \
  X(void, glfwWindowHint, (int hint, int value))                                                   \
  X(int, glfwWindowShouldClose, (GLFWwindow * window))

// X(name, value) for each constant.
#define CUPLUG_GL_CONSTANTS(X)                                                                     \
  X(GL_FALSE, 0)                                                                                   \
  X(GL_TRUE, 1)                                                                                    \
  X(GL_NO_ERROR, 0)                                                                                \
  X(GL_INVALID_ENUM, 0x0500)                                                                       \
  X(GL_INVALID_VALUE, 0x0501)                                                                      \
  X(GL_INVALID_OPERATION, 0x0502)                                                                  \
  X(GL_OUT_OF_MEMORY, 0x0505)                                                                      \
  X(GL_INVALID_FRAMEBUFFER_OPERATION, 0x0506)                                                      \
  X(GL_QUADS, 0x0007)                                                                              \
  X(GL_TRIANGLES, 0x0004)                                                                          \
  X(GL_DEPTH_BUFFER_BIT, 0x00000100)                                                               \
  X(GL_COLOR_BUFFER_BIT, 0x00004000)                                                               \
  X(GL_VIEWPORT, 0x0BA2)                                                                           \
  X(GL_UNPACK_ALIGNMENT, 0x0CF5)                                                                   \
  X(GL_PACK_ALIGNMENT, 0x0D05)                                                                     \
  X(GL_TEXTURE_2D, 0x0DE1)                                                                         \
  X(GL_UNSIGNED_BYTE, 0x1401)                                                                      \
  X(GL_FLOAT, 0x1406)                                                                              \
  X(GL_MODELVIEW, 0x1700)                                                                          \
  X(GL_PROJECTION, 0x1701)                                                                         \
  X(GL_RGBA, 0x1908)                                                                               \
  X(GL_VENDOR, 0x1F00)                                                                             \
  X(GL_RENDERER, 0x1F01)                                                                           \
  X(GL_VERSION, 0x1F02)                                                                            \
  X(GL_REPLACE, 0x1E01)                                                                            \
  X(GL_TEXTURE_ENV_MODE, 0x2200)                                                                   \
  X(GL_TEXTURE_ENV, 0x2300)                                                                        \
  X(GL_NEAREST, 0x2600)                                                                            \
  X(GL_TEXTURE_MAG_FILTER, 0x2800)                                                                 \
  X(GL_TEXTURE_MIN_FILTER, 0x2801)                                                                 \
  X(GL_TEXTURE_WRAP_S, 0x2802)                                                                     \
  X(GL_TEXTURE_WRAP_T, 0x2803)                                                                     \
  X(GL_VERTEX_ARRAY, 0x8074)                                                                       \
  X(GL_COLOR_ARRAY, 0x8076)                                                                        \
  X(GL_RGBA8, 0x8058)                                                                              \
  X(GL_CLAMP_TO_EDGE, 0x812F)                                                                      \
  X(GL_TEXTURE0, 0x84C0)                                                                           \
  X(GL_RGBA32F, 0x8814)                                                                            \
  X(GL_ARRAY_BUFFER, 0x8892)                                                                       \
  X(GL_BUFFER_SIZE, 0x8764)                                                                        \
  X(GL_DYNAMIC_DRAW, 0x88E8)                                                                       \
  X(GL_PIXEL_UNPACK_BUFFER, 0x88EC)                                                                \
  X(GL_FRAGMENT_SHADER, 0x8B30)                                                                    \
  X(GL_VERTEX_SHADER, 0x8B31)                                                                      \
  X(GL_COMPILE_STATUS, 0x8B81)                                                                     \
  X(GL_LINK_STATUS, 0x8B82)                                                                        \
  X(GL_TEXTURE_BUFFER, 0x8C2A)                                                                     \
  X(GL_MAX_TEXTURE_BUFFER_SIZE, 0x8C2B)                                                            \
  X(GL_READ_FRAMEBUFFER, 0x8CA8)                                                                   \
  X(GL_DRAW_FRAMEBUFFER, 0x8CA9)                                                                   \
  X(GL_FRAMEBUFFER_COMPLETE, 0x8CD5)                                                               \
  X(GL_COLOR_ATTACHMENT0, 0x8CE0)                                                                  \
  X(GL_FRAMEBUFFER, 0x8D40)

#define CUPLUG_EGL_CONSTANTS(X)                                                                    \
  X(EGL_NONE, 0x3038)                                                                              \
  X(EGL_ALPHA_SIZE, 0x3021)                                                                        \
  X(EGL_BLUE_SIZE, 0x3022)                                                                         \
  X(EGL_GREEN_SIZE, 0x3023)                                                                        \
  X(EGL_RED_SIZE, 0x3024)                                                                          \
  X(EGL_SURFACE_TYPE, 0x3033)                                                                      \
  X(EGL_RENDERABLE_TYPE, 0x3040)                                                                   \
  X(EGL_PBUFFER_BIT, 0x0001)                                                                       \
  X(EGL_OPENGL_BIT, 0x0008)                                                                        \
  X(EGL_OPENGL_API, 0x30A2)                                                                        \
  X(EGL_PLATFORM_DEVICE_EXT, 0x313F)                                                               \
  X(EGL_PLATFORM_SURFACELESS_MESA, 0x31DD)                                                         \
  X(EGL_CUDA_DEVICE_NV, 0x323A)

#define CUPLUG_GLFW_CONSTANTS(X)                                                                   \
  X(GLFW_FALSE, 0)                                                                                 \
  X(GLFW_TRUE, 1)                                                                                  \
  X(GLFW_VISIBLE, 0x00020004)                                                                      \
  X(GLFW_CLIENT_API, 0x00022001)                                                                   \
  X(GLFW_OPENGL_API, 0x00030001)

namespace cuplug::gl {

#define CUPLUG_GL_DECLARE_POINTER(ret, name, params) extern ret(*name) params;
CUPLUG_GL_REQUIRED(CUPLUG_GL_DECLARE_POINTER)
CUPLUG_GL_BUFFER_IMAGE(CUPLUG_GL_DECLARE_POINTER)
CUPLUG_EGL_FUNCTIONS(CUPLUG_GL_DECLARE_POINTER)
CUPLUG_EGL_EXTENSIONS(CUPLUG_GL_DECLARE_POINTER)
CUPLUG_GLFW_FUNCTIONS(CUPLUG_GL_DECLARE_POINTER)
#undef CUPLUG_GL_DECLARE_POINTER

#define CUPLUG_GL_DECLARE_CONSTANT(name, value) inline constexpr int name = value;
CUPLUG_GL_CONSTANTS(CUPLUG_GL_DECLARE_CONSTANT)
CUPLUG_EGL_CONSTANTS(CUPLUG_GL_DECLARE_CONSTANT)
CUPLUG_GLFW_CONSTANTS(CUPLUG_GL_DECLARE_CONSTANT)
#undef CUPLUG_GL_DECLARE_CONSTANT

inline const EGLDisplay EGL_NO_DISPLAY = nullptr;
inline const EGLContext EGL_NO_CONTEXT = nullptr;
inline const EGLSurface EGL_NO_SURFACE = nullptr;
inline void *const EGL_DEFAULT_DISPLAY = nullptr;

// (load_glfw and load_egl are in gl_window.hpp.)
// GL's entry points for the context current now, through `get_proc` (glfwGetProcAddress or
// eglGetProcAddress; `through` names it in errors), any it does not give from libOpenGL.so.0 or
// libGL.so.1. Throws gl_error naming a required one that is nowhere.
void load_gl(GLFWglproc (*get_proc)(const char *), const char *through);
// "major.minor" of the current context's GL_VERSION as major * 10 + minor (0 if unreadable).
int gl_version();

} // namespace cuplug::gl
