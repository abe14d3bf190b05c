// The NVRTC compiler plugin: options, name expressions, log and output of one nvrtcProgram.
#include "nvrtc_compiler.hpp"

#include <cuplug/errors.hpp>
#include <cuplug/gpu_arch.hpp>
#include <cuplug/plugin.hpp>

#include <nvrtc.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>

namespace cuplug::plugins {
namespace {
namespace fs = std::filesystem;

void check(nvrtcResult r, const char *call) {
  if (r != NVRTC_SUCCESS)
    throw plugin_error(std::string(call) + " failed: " + nvrtcGetErrorString(r));
}

bool exists(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string join(const std::vector<std::string> &parts) {
  std::string s;
  for (const auto &p : parts) {
    if (!s.empty())
      s += ' ';
    s += p;
  }
  return s;
}

bool starts_with(const std::string &s, const char *prefix) { return s.rfind(prefix, 0) == 0; }

// The loaded libnvrtc's path, as the loader found it and resolved.
std::vector<std::string> nvrtc_library_paths() {
  std::vector<std::string> out;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(&nvrtcVersion), &info) != 0 && info.dli_fname) {
    out.emplace_back(info.dli_fname);
    if (char *real = ::realpath(info.dli_fname, nullptr)) {
      out.emplace_back(real);
      std::free(real);
    }
  }
  return out;
}

// The toolkit include dir (one holding cuda.h) and its CCCL dir: next to the loaded libnvrtc
// first, so that the headers match the compiler, then $CUDA_PATH / $CUDA_HOME, then the build's.
std::vector<std::string> find_toolkit_includes() {
  std::vector<std::string> candidates;
  for (const auto &lib : nvrtc_library_paths()) {
    fs::path dir = fs::path(lib).parent_path();
    candidates.push_back((dir.parent_path() / "include").string());
    candidates.push_back((dir.parent_path().parent_path() / "include").string());
  }
  for (const char *var : {"CUDA_PATH", "CUDA_HOME"})
    if (const char *v = std::getenv(var); v && *v)
      candidates.push_back(std::string(v) + "/include");
#ifdef CUPLUG_BUILD_CUDA_INCLUDE_DIR
  candidates.emplace_back(CUPLUG_BUILD_CUDA_INCLUDE_DIR);
#endif
  for (const auto &c : candidates) {
    if (!exists(c + "/cuda.h"))
      continue;
    std::string dir = fs::path(c).lexically_normal().string();
    std::vector<std::string> out{dir};
    if (exists(dir + "/cccl/cub"))
      out.push_back(dir + "/cccl"); // CUDA 13 keeps CCCL here
    return out;
  }
  return {};
}

bool has_option(const std::vector<std::string> &opts, std::initializer_list<const char *> names) {
  for (const auto &o : opts)
    for (const char *n : names)
      if (o == n || starts_with(o, (std::string(n) + "=").c_str()))
        return true;
  return false;
}

struct program {
  nvrtcProgram handle = nullptr;
  ~program() {
    if (handle)
      nvrtcDestroyProgram(&handle);
  }
};

std::string program_log(nvrtcProgram p) {
  std::size_t size = 0;
  if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size == 0)
    return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS)
    return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' '))
    log.pop_back();
  return log;
}

nvrtcResult compile_program(program &p, const std::string &source, const std::string &name,
                            const std::vector<std::string> &opts,
                            const std::vector<std::string> &name_expressions) {
  check(nvrtcCreateProgram(&p.handle, source.c_str(), name.c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  for (const auto &e : name_expressions)
    check(nvrtcAddNameExpression(p.handle, e.c_str()), "nvrtcAddNameExpression");
  std::vector<const char *> argv;
  for (const auto &o : opts)
    argv.push_back(o.c_str());
  return nvrtcCompileProgram(p.handle, static_cast<int>(argv.size()), argv.data());
}

} // namespace

nvrtc_compiler::nvrtc_compiler(const options &) {
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  version_ = "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
  // The library file's own version ("libnvrtc.so.13.0.88") tells patch releases apart, which
  // generate different code; the cache key must see that.
  auto libs = nvrtc_library_paths();
  if (!libs.empty()) {
    std::string file = fs::path(libs.back()).filename().string();
    if (std::count(file.begin(), file.end(), '.') >= 4)
      version_ += " (" + file + ")";
  }
  int n = 0;
  check(nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  archs_.resize(static_cast<std::size_t>(n));
  if (n > 0)
    check(nvrtcGetSupportedArchs(archs_.data()), "nvrtcGetSupportedArchs");
  std::sort(archs_.begin(), archs_.end());
  toolkit_includes_ = find_toolkit_includes();
}

std::vector<std::string> nvrtc_compiler::builtin_options(const compile_request &r) const {
  std::vector<std::string> out;
  if (!has_option(r.options, {"-arch", "--gpu-architecture"})) {
    if (r.arch.empty()) {
      if (r.target == image_format::cubin)
        throw config_error("nvrtc needs a GPU architecture to produce cubin (e.g. arch sm_90); "
                           "none was given");
    } else {
      gpu_arch a = parse_arch(r.arch);
      std::string prefix = r.target == image_format::cubin ? "sm_" : "compute_";
      out.push_back("-arch=" + prefix + std::to_string(a.number) + a.suffix);
    }
  }
  if (r.target == image_format::ltoir && !has_option(r.options, {"-dlto", "--dlto"}))
    out.emplace_back("-dlto");
  if (r.relocatable && !has_option(r.options, {"-rdc", "--relocatable-device-code", "-dc"}))
    out.emplace_back("-rdc=true");
  for (const auto &d : r.include_dirs)
    out.push_back("-I" + d);
  for (const auto &d : toolkit_includes_)
    out.push_back("-I" + d);
  return out;
}

std::vector<std::string>
nvrtc_compiler::rejected_options(const std::vector<std::string> &user_options) const {
  std::vector<std::string> bad;
  for (const auto &o : user_options) {
    program p;
    if (compile_program(p, "\n", "probe.cu", {o}, {}) == NVRTC_ERROR_INVALID_OPTION)
      bad.push_back(o);
  }
  return bad;
}

compiled_image nvrtc_compiler::do_compile(const compile_request &r) {
  if (r.target == image_format::fatbin)
    throw not_supported("nvrtc produces cubin, PTX or LTO-IR, not fatbin; use target 'cubin' "
                        "or the nvcc backend");
  std::vector<std::string> opts = builtin_options(r);
  opts.insert(opts.end(), r.options.begin(), r.options.end());

  compiled_image out;
  out.format = r.target;
  out.command = "nvrtc " + join(opts) + " " + r.source_name;

  program p;
  nvrtcResult res = compile_program(p, r.source, r.source_name, opts, r.name_expressions);
  out.log = program_log(p.handle);
  if (res == NVRTC_ERROR_INVALID_OPTION) {
    auto bad = rejected_options(r.options);
    std::string what =
        bad.empty() ? "the options '" + join(r.options) + "'"
                    : "option" + std::string(bad.size() > 1 ? "s" : "") + " '" + join(bad) + "'";
    throw config_error("nvrtc does not accept " + what +
                       (out.log.empty() ? std::string() : " (" + out.log + ")") +
                       "; use NVRTC's spellings (e.g. --use_fast_math, -D<macro>) or compile with "
                       "the nvcc backend");
  }
  if (res != NVRTC_SUCCESS) {
    std::string log = out.log.empty() ? std::string(nvrtcGetErrorString(res)) : out.log;
    throw compile_error("nvrtc compilation of " + r.source_name + " failed", log, out.command);
  }

  std::size_t size = 0;
  switch (r.target) {
  case image_format::cubin:
    if (nvrtcGetCUBINSize(p.handle, &size) != NVRTC_SUCCESS || size == 0)
      throw compile_error(
          "nvrtc produced no cubin for " + r.source_name +
              ": the architecture option names a virtual architecture (compute_XX); "
              "use sm_XX",
          out.log, out.command);
    out.data.resize(size);
    check(nvrtcGetCUBIN(p.handle, out.data.data()), "nvrtcGetCUBIN");
    break;
  case image_format::ptx:
    check(nvrtcGetPTXSize(p.handle, &size), "nvrtcGetPTXSize");
    out.data.resize(size);
    check(nvrtcGetPTX(p.handle, out.data.data()), "nvrtcGetPTX");
    while (!out.data.empty() && out.data.back() == '\0')
      out.data.pop_back();
    break;
  case image_format::ltoir:
    check(nvrtcGetLTOIRSize(p.handle, &size), "nvrtcGetLTOIRSize");
    out.data.resize(size);
    check(nvrtcGetLTOIR(p.handle, out.data.data()), "nvrtcGetLTOIR");
    break;
  case image_format::fatbin:
    break; // refused above
  }

  for (const auto &e : r.name_expressions) {
    const char *lowered = nullptr;
    if (nvrtcGetLoweredName(p.handle, e.c_str(), &lowered) != NVRTC_SUCCESS || !lowered)
      throw compile_error("nvrtc could not lower the name expression '" + e + "'", out.log,
                          out.command);
    out.lowered_names[e] = lowered;
  }
  return out;
}

} // namespace cuplug::plugins

CUPLUG_PLUGIN(compiler, cuplug::plugins::nvrtc_compiler, "nvrtc",
              "NVRTC: compiles CUDA C++ in process to cubin, PTX or LTO-IR", CUPLUG_PLUGIN_VERSION)
