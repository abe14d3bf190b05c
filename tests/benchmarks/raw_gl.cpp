// Raw C++ floor of bench_gl.py: a headless EGL context on the CUDA device with NVIDIA's GL and the
// driver API called directly. Measures map + unmap of a registered buffer (by size, flags and what
// follows each pair), and 1920x1080 RGBA frames that CUDA writes and GL shows, each frame finished
// (glFinish) or pipelined (one glFinish after the last): through a registered pixel buffer mapped
// every frame (copied into a texture, or drawn straight from the buffer), through the host (copy
// to pinned memory, glTexSubImage2D), and through memory CUDA allocates and exports (cuMemCreate,
// POSIX fd) that GL imports (GL_EXT_memory_object_fd), never mapped. Also each side alone.
// Prints "raw_gl: what=... key=value ..." lines; exits 1 when a step fails.
#include <GL/glew.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>

#include "raw_bench.hpp"

#include <cuda.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *program = "raw_gl";
constexpr int W = 1920, H = 1080;
constexpr std::size_t frame_bytes = std::size_t(W) * H * 4;

// cuGraphicsGLRegisterBuffer, looked up in the driver at run time: the toolkit's link stub of
// libcuda may lack the GL entry points (Debian's CI image's does), and cudaGL.h needs GL/gl.h.
using register_buffer_fn = CUresult (*)(CUgraphicsResource *, GLuint, unsigned);
register_buffer_fn cuGraphicsGLRegisterBuffer = nullptr;

void check(CUresult r, const char *what) { raw_bench::check(program, r, what); }

void fail(const char *what) {
  std::fprintf(stderr, "%s: %s (EGL error 0x%x, GL error 0x%x)\n", program, what, eglGetError(),
               glGetError());
  std::exit(1);
}

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Best of `repeats` of the mean time of `iters` calls of f, in microseconds.
template <class F> double best_us(int repeats, int iters, F f) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = now_us();
    for (int i = 0; i < iters; ++i)
      f(i);
    const double t = (now_us() - t0) / iters;
    if (t < best)
      best = t;
  }
  return best;
}

// "<name>_med_us=.. <name>_p90_us=.. <name>_mean_us=.." of a list of times.
std::string stats(const char *name, std::vector<double> t) {
  double mean = 0;
  for (double x : t)
    mean += x;
  mean /= double(t.size());
  std::sort(t.begin(), t.end());
  char out[160];
  std::snprintf(out, sizeof out, "%s_med_us=%.2f %s_p90_us=%.2f %s_mean_us=%.2f", name,
                t[t.size() / 2], name, t[t.size() * 9 / 10], name, mean);
  return out;
}

// Microseconds per frame, best of `repeats` runs of `frames` frames: each frame ending in
// glFinish (finish_each), or GL left to pipeline frames with one glFinish after the last.
template <class F> double frame_us(int repeats, int frames, bool finish_each, F frame) {
  return best_us(repeats, 1,
                 [&](int) {
                   for (int i = 0; i < frames; ++i) {
                     frame(i);
                     if (finish_each)
                       glFinish();
                   }
                   glFinish();
                 }) /
         frames;
}

struct egl_gl {
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLContext context = EGL_NO_CONTEXT;
};

// The first EGL device (NVIDIA's, with one GPU), a desktop GL context without a surface.
egl_gl open_gl() {
  auto query = reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(eglGetProcAddress("eglQueryDevicesEXT"));
  auto platform = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      eglGetProcAddress("eglGetPlatformDisplayEXT"));
  EGLDeviceEXT devices[8];
  EGLint count = 0;
  if (!query || !platform || !query(8, devices, &count) || count == 0)
    fail("no EGL device");
  egl_gl g;
  g.display = platform(EGL_PLATFORM_DEVICE_EXT, devices[0], nullptr);
  EGLint major = 0, minor = 0;
  if (g.display == EGL_NO_DISPLAY || !eglInitialize(g.display, &major, &minor))
    fail("eglInitialize");
  if (!eglBindAPI(EGL_OPENGL_API))
    fail("eglBindAPI");
  const EGLint attrs[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT,
                          EGL_NONE};
  EGLConfig config;
  EGLint n = 0;
  if (!eglChooseConfig(g.display, attrs, &config, 1, &n) || n == 0)
    fail("eglChooseConfig");
  g.context = eglCreateContext(g.display, config, EGL_NO_CONTEXT, nullptr);
  if (g.context == EGL_NO_CONTEXT)
    fail("eglCreateContext");
  if (!eglMakeCurrent(g.display, EGL_NO_SURFACE, EGL_NO_SURFACE, g.context))
    fail("eglMakeCurrent");
  glewExperimental = GL_TRUE;
  const GLenum r = glewInit(); // loads GL, then fails looking for GLX on an EGL context
  if (r != GLEW_OK && r != GLEW_ERROR_NO_GLX_DISPLAY)
    fail("glewInit");
  while (glGetError() != GL_NO_ERROR) {
  }
  std::printf("%s: what=gl version=\"%s\" renderer=\"%s\"\n", program, glGetString(GL_VERSION),
              glGetString(GL_RENDERER));
  return g;
}

GLuint make_buffer(std::size_t bytes) {
  GLuint b = 0;
  glGenBuffers(1, &b);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, b);
  glBufferData(GL_PIXEL_UNPACK_BUFFER, GLsizeiptr(bytes), nullptr, GL_STREAM_DRAW);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
  return b;
}

GLuint make_texture() {
  GLuint t = 0;
  glGenTextures(1, &t);
  glBindTexture(GL_TEXTURE_2D, t);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, W, H);
  return t;
}

void upload_from_pbo(GLuint texture, GLuint pbo) {
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, pbo);
  glBindTexture(GL_TEXTURE_2D, texture);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, W, H, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
}

GLuint compile(GLenum type, const char *source) {
  GLuint sh = glCreateShader(type);
  glShaderSource(sh, 1, &source, nullptr);
  glCompileShader(sh);
  GLint ok = 0;
  glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[2048];
    glGetShaderInfoLog(sh, sizeof log, nullptr, log);
    std::fprintf(stderr, "%s: shader: %s\n", program, log);
    std::exit(1);
  }
  return sh;
}

// A program that fills the framebuffer with a full-screen triangle whose pixels come from
// `sampler` (row 0 at the top): a 2D texture, or a buffer of RGBA8 texels through a buffer
// texture (drawn straight from the buffer, without a copy into a texture).
GLuint image_program(bool from_buffer) {
  const char *vs =
      "#version 330\n"
      "void main() {\n"
      "  vec2 p = vec2(gl_VertexID == 1 ? 3.0 : -1.0, gl_VertexID == 2 ? 3.0 : -1.0);\n"
      "  gl_Position = vec4(p, 0.0, 1.0);\n"
      "}\n";
  const char *fs_buffer = "#version 330\n"
                          "uniform samplerBuffer pixels;\n"
                          "uniform int width, height;\n"
                          "out vec4 color;\n"
                          "void main() {\n"
                          "  ivec2 p = ivec2(gl_FragCoord.xy);\n"
                          "  color = texelFetch(pixels, (height - 1 - p.y) * width + p.x);\n"
                          "}\n";
  const char *fs_texture = "#version 330\n"
                           "uniform sampler2D pixels;\n"
                           "uniform int width, height;\n"
                           "out vec4 color;\n"
                           "void main() {\n"
                           "  ivec2 p = ivec2(gl_FragCoord.xy);\n"
                           "  color = texelFetch(pixels, ivec2(p.x, height - 1 - p.y), 0);\n"
                           "}\n";
  GLuint prog = glCreateProgram();
  glAttachShader(prog, compile(GL_VERTEX_SHADER, vs));
  glAttachShader(prog, compile(GL_FRAGMENT_SHADER, from_buffer ? fs_buffer : fs_texture));
  glLinkProgram(prog);
  GLint ok = 0;
  glGetProgramiv(prog, GL_LINK_STATUS, &ok);
  if (!ok)
    fail("glLinkProgram");
  glUseProgram(prog);
  glUniform1i(glGetUniformLocation(prog, "pixels"), 0);
  glUniform1i(glGetUniformLocation(prog, "width"), W);
  glUniform1i(glGetUniformLocation(prog, "height"), H);
  glUseProgram(0);
  return prog;
}

struct cuda_side {
  CUdevice device;
  CUstream stream;
};

// map + unmap of one registered buffer by size and registration flags, each pair followed by
// nothing, by glFlush or by glFinish (a frame loop finishes GL's work every frame), and map +
// unmap + stream synchronize. The driver refuses to map without the GL context current
// (CUDA_ERROR_INVALID_GRAPHICS_CONTEXT).
void map_unmap_sweep(const cuda_side &cu) {
  for (std::size_t bytes : {std::size_t(4096), frame_bytes}) {
    for (unsigned flags : {unsigned(CU_GRAPHICS_REGISTER_FLAGS_NONE),
                           unsigned(CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD)}) {
      GLuint b = make_buffer(bytes);
      CUgraphicsResource res;
      check(cuGraphicsGLRegisterBuffer(&res, b, flags), "cuGraphicsGLRegisterBuffer");
      const char *flag_name = flags ? "write_discard" : "none";
      for (const char *then : {"nothing", "glFlush", "glFinish", "sync"}) {
        const int n = 300;
        std::vector<double> maps(n), unmaps(n), pairs(n);
        for (int i = 0; i < n; ++i) {
          const double t0 = now_us();
          check(cuGraphicsMapResources(1, &res, cu.stream), "map");
          const double t1 = now_us();
          check(cuGraphicsUnmapResources(1, &res, cu.stream), "unmap");
          if (then[0] == 's')
            check(cuStreamSynchronize(cu.stream), "cuStreamSynchronize");
          const double t2 = now_us();
          maps[i] = t1 - t0;
          unmaps[i] = t2 - t1;
          pairs[i] = t2 - t0;
          if (!std::strcmp(then, "glFlush"))
            glFlush();
          else if (!std::strcmp(then, "glFinish"))
            glFinish();
        }
        std::printf("%s: what=map_unmap bytes=%zu flags=%s then=%s %s %s %s\n", program, bytes,
                    flag_name, then, stats("pair", pairs).c_str(), stats("map", maps).c_str(),
                    stats("unmap", unmaps).c_str());
      }
      check(cuGraphicsUnregisterResource(res), "unregister");
      glDeleteBuffers(1, &b);
    }
  }
}

void print_frame(const char *path, double finished_us, double pipelined_us) {
  std::printf("%s: what=frame path=%s finished_us=%.2f finished_fps=%.1f pipelined_us=%.2f "
              "pipelined_fps=%.1f\n",
              program, path, finished_us, 1e6 / finished_us, pipelined_us, 1e6 / pipelined_us);
}

// CUDA's memory exported as a POSIX fd and imported by GL as a buffer's storage
// (GL_EXT_memory_object_fd): shared for good, never mapped. Returns the GL buffer (0 where GL
// cannot import it) and sets `ptr` to CUDA's address of it.
GLuint shared_buffer(const cuda_side &cu, CUdeviceptr &ptr) {
  auto create_mem = reinterpret_cast<PFNGLCREATEMEMORYOBJECTSEXTPROC>(
      eglGetProcAddress("glCreateMemoryObjectsEXT"));
  auto import_fd =
      reinterpret_cast<PFNGLIMPORTMEMORYFDEXTPROC>(eglGetProcAddress("glImportMemoryFdEXT"));
  auto storage_mem = reinterpret_cast<PFNGLNAMEDBUFFERSTORAGEMEMEXTPROC>(
      eglGetProcAddress("glNamedBufferStorageMemEXT"));
  if (!create_mem || !import_fd || !storage_mem)
    return 0;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = cu.device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  std::size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  const std::size_t size = (frame_bytes + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle;
  check(cuMemCreate(&handle, size, &prop, 0), "cuMemCreate");
  check(cuMemAddressReserve(&ptr, size, 0, 0, 0), "cuMemAddressReserve");
  check(cuMemMap(ptr, size, 0, handle, 0), "cuMemMap");
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(cuMemSetAccess(ptr, size, &access, 1), "cuMemSetAccess");
  int fd = -1;
  check(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemExportToShareableHandle");
  GLuint memory = 0, buffer = 0;
  create_mem(1, &memory);
  import_fd(memory, GLuint64(size), GL_HANDLE_TYPE_OPAQUE_FD_EXT, fd); // GL owns the fd now
  glCreateBuffers(1, &buffer);
  storage_mem(buffer, GLsizeiptr(size), memory, 0);
  return glGetError() == GL_NO_ERROR ? buffer : 0;
}

} // namespace

int main(int argc, char **argv) {
  int frames = 300, repeats = 3;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--frames") && i + 1 < argc)
      frames = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc)
      repeats = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--frames N] [--repeats R]\n", argv[0]);
      return 2;
    }
  }
  if (frames <= 0 || repeats <= 0) {
    std::fprintf(stderr, "%s: --frames and --repeats must be positive\n", program);
    return 2;
  }
  open_gl();
  cuda_side cu{};
  cu.device = raw_bench::use_primary_context(program);
  void *entry = nullptr;
  check(cuGetProcAddress("cuGraphicsGLRegisterBuffer", &entry, CUDA_VERSION,
                         CU_GET_PROC_ADDRESS_DEFAULT, nullptr),
        "cuGetProcAddress(cuGraphicsGLRegisterBuffer)");
  cuGraphicsGLRegisterBuffer = reinterpret_cast<register_buffer_fn>(entry);
  check(cuStreamCreate(&cu.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  map_unmap_sweep(cu);

  GLuint texture = make_texture();
  GLuint pbo = make_buffer(frame_bytes);
  CUgraphicsResource res;
  check(cuGraphicsGLRegisterBuffer(&res, pbo, CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD),
        "cuGraphicsGLRegisterBuffer");
  // Every frame is drawn into a 1920x1080 framebuffer, as cuplug.gl.Window does: a full-screen
  // triangle textured from the frame.
  GLuint fbo = 0, vao = 0, tbo = 0;
  glGenFramebuffers(1, &fbo);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo);
  GLuint target = make_texture();
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, target, 0);
  glViewport(0, 0, W, H);
  glGenVertexArrays(1, &vao);
  glBindVertexArray(vao);
  glGenTextures(1, &tbo);
  glBindTexture(GL_TEXTURE_BUFFER, tbo);
  glTexBuffer(GL_TEXTURE_BUFFER, GL_RGBA8, pbo);
  const GLuint from_texture = image_program(false), from_buffer = image_program(true);
  glActiveTexture(GL_TEXTURE0);
  auto draw_texture = [&] {
    glUseProgram(from_texture);
    glBindTexture(GL_TEXTURE_2D, texture);
    glDrawArrays(GL_TRIANGLES, 0, 3);
  };
  auto draw_buffer = [&] {
    glUseProgram(from_buffer);
    glBindTexture(GL_TEXTURE_BUFFER, tbo);
    glDrawArrays(GL_TRIANGLES, 0, 3);
  };
  // CUDA's part of an interop frame: map, write the frame (a memset stands for the kernel), unmap.
  auto mapped_write = [&](int i) {
    check(cuGraphicsMapResources(1, &res, cu.stream), "map");
    CUdeviceptr p;
    std::size_t n;
    check(cuGraphicsResourceGetMappedPointer(&p, &n, res), "pointer");
    check(cuMemsetD32Async(p, 0xff000000u | unsigned(i), n / 4, cu.stream), "memset");
    check(cuGraphicsUnmapResources(1, &res, cu.stream), "unmap");
  };
  const std::uint32_t expected = 0xff000000u | unsigned(frames - 1);
  auto check_frame = [&](const char *path) {
    std::vector<std::uint32_t> px(std::size_t(W) * H);
    glReadPixels(0, 0, W, H, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
    std::printf("%s: what=check path=%s pixel=0x%08x expected=0x%08x ok=%d\n", program, path, px[0],
                expected, int(px[0] == expected));
  };

  // (a) interop: the mapped PBO written by CUDA, copied by GL into a texture, drawn.
  auto mapped_frame = [&](int i) {
    mapped_write(i);
    upload_from_pbo(texture, pbo);
    draw_texture();
  };
  print_frame("mapped_pbo", frame_us(repeats, frames, true, mapped_frame),
              frame_us(repeats, frames, false, mapped_frame));
  check_frame("mapped_pbo");

  // (b) interop drawn straight from the mapped buffer (buffer texture): no copy into a texture.
  auto shader_frame = [&](int i) {
    mapped_write(i);
    draw_buffer();
  };
  print_frame("mapped_buffer_draw", frame_us(repeats, frames, true, shader_frame),
              frame_us(repeats, frames, false, shader_frame));
  check_frame("mapped_buffer_draw");

  // (c) the host path: the frame copied to pinned memory, uploaded by glTexSubImage2D, drawn.
  CUdeviceptr dframe;
  check(cuMemAlloc(&dframe, frame_bytes), "cuMemAlloc");
  void *host;
  check(cuMemHostAlloc(&host, frame_bytes, 0), "cuMemHostAlloc");
  auto host_frame = [&](int i) {
    check(cuMemsetD32Async(dframe, 0xff000000u | unsigned(i), frame_bytes / 4, cu.stream),
          "memset");
    check(cuMemcpyDtoHAsync(host, dframe, frame_bytes, cu.stream), "copy");
    check(cuStreamSynchronize(cu.stream), "sync");
    glBindTexture(GL_TEXTURE_2D, texture);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, W, H, GL_RGBA, GL_UNSIGNED_BYTE, host);
    draw_texture();
  };
  const int host_frames = frames / 4 + 1;
  print_frame("host", frame_us(repeats, host_frames, true, host_frame),
              frame_us(repeats, host_frames, false, host_frame));

  // Each side alone: GL drawing with no CUDA work between frames; CUDA writing plain memory, and
  // the mapped buffer, with no GL work between frames.
  print_frame("gl_draw_only", frame_us(repeats, frames, true, [&](int) { draw_texture(); }),
              frame_us(repeats, frames, false, [&](int) { draw_texture(); }));
  const double write_us = best_us(repeats, frames, [&](int i) {
    check(cuMemsetD32Async(dframe, unsigned(i), frame_bytes / 4, cu.stream), "memset");
    check(cuStreamSynchronize(cu.stream), "sync");
  });
  const double mapped_write_us = best_us(repeats, frames, [&](int i) {
    mapped_write(i);
    check(cuStreamSynchronize(cu.stream), "sync");
  });
  std::printf("%s: what=cuda_only write_sync_us=%.2f map_write_unmap_sync_us=%.2f\n", program,
              write_us, mapped_write_us);

  // (d) CUDA's own memory imported by GL (no map), GL's reads fenced before CUDA writes again.
  CUdeviceptr shared = 0;
  GLuint sbuf = shared_buffer(cu, shared);
  if (!sbuf) {
    std::printf("%s: what=check path=shared_memory ok=0 reason=GL_EXT_memory_object_fd\n", program);
    return 0;
  }
  GLsync read = nullptr;
  auto shared_frame = [&](int i) {
    if (read) {
      glClientWaitSync(read, GL_SYNC_FLUSH_COMMANDS_BIT, GLuint64(1e9));
      glDeleteSync(read);
    }
    check(cuMemsetD32Async(shared, 0xff000000u | unsigned(i), frame_bytes / 4, cu.stream),
          "memset");
    check(cuStreamSynchronize(cu.stream), "sync"); // GL reads after CUDA's writes
    upload_from_pbo(texture, sbuf);
    draw_texture();
    read = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  };
  print_frame("shared_memory", frame_us(repeats, frames, true, shared_frame),
              frame_us(repeats, frames, false, shared_frame));
  check_frame("shared_memory");
  return 0;
}
