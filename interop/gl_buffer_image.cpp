// A full-screen triangle whose fragments fetch their texel from a buffer texture.
#include "gl_buffer_image.hpp"

#include "gl_api.hpp"

#include <string>

namespace cuplug::gl {
namespace {

// The triangle (-1,-1), (3,-1), (-1,3) covers the viewport; no vertex buffer is needed.
const char *vertex_source = "#version 140\n"
                            "void main() {\n"
                            "  gl_Position = vec4(gl_VertexID == 1 ? 3.0 : -1.0,\n"
                            "                     gl_VertexID == 2 ? 3.0 : -1.0, 0.0, 1.0);\n"
                            "}\n";
// Nearest texel of the image for this fragment; image row 0 at the top of the viewport.
const char *fragment_source = "#version 140\n"
                              "uniform samplerBuffer pixels;\n"
                              "uniform ivec2 size;\n"
                              "uniform vec2 viewport;\n"
                              "out vec4 color;\n"
                              "void main() {\n"
                              "  vec2 uv = gl_FragCoord.xy / viewport;\n"
                              "  int x = min(int(uv.x * float(size.x)), size.x - 1);\n"
                              "  int y = min(int((1.0 - uv.y) * float(size.y)), size.y - 1);\n"
                              "  color = texelFetch(pixels, y * size.x + x);\n"
                              "}\n";

// The shader's object, or 0 with `why` set to its log.
GLuint compile(GLenum type, const char *source, std::string &why) {
  GLuint shader = glCreateShader(type);
  glShaderSource(shader, 1, &source, nullptr);
  glCompileShader(shader);
  GLint ok = GL_FALSE;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (ok == GL_TRUE)
    return shader;
  char log[1024] = {};
  glGetShaderInfoLog(shader, sizeof log, nullptr, log);
  why = std::string("the buffer-image shader does not compile here: ") + log;
  glDeleteShader(shader);
  return 0;
}

} // namespace

bool buffer_image::available() {
  if (tried_)
    return program_ != 0;
  tried_ = true;
  bool loaded = true; // the context gave every GL 2.0 - 3.1 function this needs (load_gl)
#define CUPLUG_GL_LOADED(ret, name, params) loaded = loaded && name != nullptr;
  CUPLUG_GL_BUFFER_IMAGE(CUPLUG_GL_LOADED)
#undef CUPLUG_GL_LOADED
  if (gl_version() < 31 || !loaded) {
    why_ = "GL 3.1 (buffer textures) is not available in this context";
    return false;
  }
  GLint max_texels = 0;
  glGetIntegerv(GL_MAX_TEXTURE_BUFFER_SIZE, &max_texels);
  max_texels_ = max_texels;
  const GLuint vs = compile(GL_VERTEX_SHADER, vertex_source, why_);
  const GLuint fs = vs ? compile(GL_FRAGMENT_SHADER, fragment_source, why_) : 0;
  if (!fs) {
    if (vs)
      glDeleteShader(vs);
    return false;
  }
  GLuint program = glCreateProgram();
  glAttachShader(program, vs);
  glAttachShader(program, fs);
  glLinkProgram(program);
  glDeleteShader(vs); // kept alive by the program
  glDeleteShader(fs);
  GLint linked = GL_FALSE;
  glGetProgramiv(program, GL_LINK_STATUS, &linked);
  if (linked != GL_TRUE) {
    why_ = "the buffer-image shader does not link here";
    glDeleteProgram(program);
    return false;
  }
  program_ = program;
  glUseProgram(program_);
  glUniform1i(glGetUniformLocation(program_, "pixels"), 0);
  size_location_ = glGetUniformLocation(program_, "size");
  viewport_location_ = glGetUniformLocation(program_, "viewport");
  glUseProgram(0);
  GLuint texture = 0, vertex_array = 0;
  glGenTextures(1, &texture);
  glGenVertexArrays(1, &vertex_array);
  texture_ = texture;
  vertex_array_ = vertex_array;
  while (glGetError() != GL_NO_ERROR) {
  }
  return true;
}

void buffer_image::draw(unsigned buffer, int width, int height, bool float32) {
  GLint viewport[4] = {};
  glGetIntegerv(GL_VIEWPORT, viewport);
  glUseProgram(program_);
  glUniform2i(size_location_, width, height);
  glUniform2f(viewport_location_, static_cast<float>(viewport[2]), static_cast<float>(viewport[3]));
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_BUFFER, texture_);
  glTexBuffer(GL_TEXTURE_BUFFER, float32 ? GL_RGBA32F : GL_RGBA8, buffer);
  glBindVertexArray(vertex_array_);
  glDrawArrays(GL_TRIANGLES, 0, 3);
  glBindVertexArray(0);
  glBindTexture(GL_TEXTURE_BUFFER, 0);
  glUseProgram(0);
}

void buffer_image::release() noexcept {
  if (program_)
    glDeleteProgram(program_);
  if (texture_)
    glDeleteTextures(1, &texture_);
  if (vertex_array_)
    glDeleteVertexArrays(1, &vertex_array_);
  program_ = texture_ = vertex_array_ = 0;
}

} // namespace cuplug::gl
