// The NVRTC compiler plugin: options, name expressions, log and output of one nvrtcProgram.
#include "nvrtc_compiler.hpp"
#include "class_attributes.hpp"
#include "nvcc_options.hpp"
#include "nvrtc_library.hpp"
#include "signal_guard.hpp"
#include "std_headers.hpp"

#include <cuplug/compiler_support.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/gpu_arch.hpp>
#include <cuplug/log.hpp>
#include <cuplug/plugin.hpp>
#include <cuplug/toolkit.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>

namespace cuplug::plugins {
namespace {
namespace fs = std::filesystem;

void check(nvrtcResult r, const char *call) {
  if (r != NVRTC_SUCCESS)
    throw plugin_error(std::string(call) + " failed: " + nvrtc().GetErrorString(r));
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

// The include dirs kernels compiled by this NVRTC need: the one holding cuda.h, CCCL's (CUB,
// Thrust, libcu++: include/cccl in CUDA 13, include itself in CUDA 12 and in the CUDA 12 CCCL
// wheel) and cuRAND's device headers where those are apart (NVIDIA's CUDA 12 wheels put each
// component in its own folder). Looked for next to the opened libnvrtc first, so that the headers
// match the compiler, then in cuplug's toolkit search order (cuplug/toolkit.hpp), leaving out
// folders of another CUDA major version than this NVRTC's: CUDA 13's headers are not for NVRTC 12.
// The libnvrtc in use may be a pip wheel's (PyTorch loads nvidia/cu13/lib/libnvrtc.so.13 first,
// and dlopen then hands cuplug that one), whose include dir has cuda.h but no CCCL: the first dir
// with both wins; failing that, the first of each found anywhere (without CCCL, cuRAND's device
// header cannot find <nv/target>).
std::vector<std::string> find_toolkit_includes(int nvrtc_major) {
  std::vector<std::string> candidates;
  for (const auto &lib : nvrtc().paths) {
    fs::path dir = fs::path(lib).parent_path();
    candidates.push_back((dir.parent_path() / "include").string());
    candidates.push_back((dir.parent_path().parent_path() / "include").string());
  }
  for (const auto &root : toolkit_roots())
    if (root.cuda_major == 0 || root.cuda_major == nvrtc_major)
      for (const char *sub :
           {"include", "targets/x86_64-linux/include", "targets/sbsa-linux/include"})
        if (fs::path dir = fs::path(root.path) / sub; exists(dir.string()))
          candidates.push_back(dir.string());
  auto cccl_of = [](const std::string &dir) -> std::string {
    for (const std::string &c : {dir + "/cccl", dir})
      if (exists(c + "/cub") && exists(c + "/nv/target"))
        return c;
    return {};
  };
  std::string cuda_h, cccl, curand;
  for (const auto &c : candidates) {
    const std::string dir = fs::path(c).lexically_normal().string();
    const bool has_cuda_h = exists(dir + "/cuda.h");
    const std::string dir_cccl = cccl_of(dir);
    if (has_cuda_h && !dir_cccl.empty() && (cuda_h.empty() || cccl.empty())) {
      cuda_h = dir; // CUDA 13 keeps CCCL in include/cccl, CUDA 12 in include
      cccl = dir_cccl;
    }
    if (has_cuda_h && cuda_h.empty())
      cuda_h = dir;
    if (!dir_cccl.empty() && cccl.empty())
      cccl = dir_cccl;
    if (curand.empty() && exists(dir + "/curand_kernel.h"))
      curand = dir;
  }
  std::vector<std::string> out;
  for (const std::string &d : {cuda_h, cccl, curand})
    if (!d.empty() && std::find(out.begin(), out.end(), d) == out.end())
      out.push_back(d);
  return out;
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
      nvrtc().DestroyProgram(&handle);
  }
};

std::string program_log(nvrtcProgram p) {
  std::size_t size = 0;
  if (nvrtc().GetProgramLogSize(p, &size) != NVRTC_SUCCESS || size == 0)
    return {};
  std::string log(size, '\0');
  if (nvrtc().GetProgramLog(p, log.data()) != NVRTC_SUCCESS)
    return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' '))
    log.pop_back();
  return log;
}

// Asked by NVRTC between its steps whether to go on: the request's `cancelled` and the deadline.
struct flow_control {
  const std::function<bool()> *cancelled = nullptr;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool timed_out = false;
  bool was_cancelled = false;
};

int flow_callback(void *payload, void *) {
  auto *f = static_cast<flow_control *>(payload);
  if (std::chrono::steady_clock::now() >= f->deadline)
    f->timed_out = true;
  else if (f->cancelled && *f->cancelled && (*f->cancelled)())
    f->was_cancelled = true;
  return f->timed_out || f->was_cancelled ? 1 : 0;
}

nvrtcResult compile_program(program &p, const std::string &source, const std::string &name,
                            const std::vector<std::string> &opts,
                            const std::vector<std::string> &name_expressions,
                            flow_control *flow = nullptr,
                            const std::vector<const std_header *> &headers = {}) {
  std::vector<const char *> contents, names;
  for (const std_header *h : headers) {
    contents.push_back(h->content.c_str());
    names.push_back(h->name);
  }
  check(nvrtc().CreateProgram(&p.handle, source.c_str(), name.c_str(),
                              static_cast<int>(headers.size()), contents.data(), names.data()),
        "nvrtcCreateProgram");
  for (const auto &e : name_expressions)
    check(nvrtc().AddNameExpression(p.handle, e.c_str()), "nvrtcAddNameExpression");
  if (flow && nvrtc().SetFlowCallback) // NVRTC 12.8 and newer
    check(nvrtc().SetFlowCallback(p.handle, &flow_callback, flow), "nvrtcSetFlowCallback");
  std::vector<const char *> argv;
  for (const auto &o : opts)
    argv.push_back(o.c_str());
  return nvrtc().CompileProgram(p.handle, static_cast<int>(argv.size()), argv.data());
}

// The value of an option spelled "-x v", "-xv" or "--long=v" / "--long v"; false for others.
bool option_value(const std::vector<std::string> &opts, std::size_t &i,
                  std::initializer_list<const char *> joined,
                  std::initializer_list<const char *> separate, std::string &value) {
  const std::string &o = opts[i];
  for (const char *n : separate)
    if (o == n && i + 1 < opts.size()) {
      value = opts[++i];
      return true;
    }
  for (const char *n : joined)
    if (starts_with(o, n) && o.size() > std::strlen(n)) {
      value = o.substr(std::strlen(n));
      return true;
    }
  return false;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

void write_file(const std::string &path, const std::string &data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
  if (!f)
    throw plugin_error("cannot write " + path);
}

// cuplug's standard headers (std_headers.hpp) but those a user include directory or the
// source's own directory has: NVRTC would take an in-memory header before any file.
std::vector<const std_header *> std_headers_for(const std::vector<std::string> &opts,
                                                const std::vector<std::string> &toolkit,
                                                const std::string &source_name) {
  std::vector<std::string> dirs;
  const std::string source_dir = fs::path(source_name).parent_path().string();
  if (!source_dir.empty())
    dirs.push_back(source_dir);
  for (std::size_t i = 0; i < opts.size(); ++i) {
    std::string v;
    if (option_value(opts, i, {"--include-path=", "-I"}, {"-I", "--include-path"}, v) &&
        std::find(toolkit.begin(), toolkit.end(), v) == toolkit.end())
      dirs.push_back(v);
  }
  std::vector<const std_header *> out;
  for (const auto &h : std_headers()) {
    bool shadowed = false;
    for (const auto &d : dirs)
      shadowed = shadowed || exists(d + "/" + h.name);
    if (!shadowed)
      out.push_back(&h);
  }
  return out;
}

} // namespace

nvrtc_compiler::nvrtc_compiler(const options &opts) {
  timeout_option_ = opts.get_string("timeout", "");
  compile_timeout(timeout_option_);   // a bad value fails here, not at the first compile
  const nvrtc_library &lib = nvrtc(); // config_error when no NVRTC fits the driver
  version_ = "nvrtc " + std::to_string(lib.major) + "." + std::to_string(lib.minor);
  // The library file's own version ("libnvrtc.so.13.0.88") tells patch releases apart, which
  // generate different code; the cache key must see that.
  const auto &libs = lib.paths;
  if (!libs.empty()) {
    std::string file = fs::path(libs.back()).filename().string();
    if (std::count(file.begin(), file.end(), '.') >= 4)
      version_ += " (" + file + ")";
  }
  // The standard headers cuplug supplies change what compiles and how: the cache must see them.
  version_ += " + cuplug std headers " + std_headers_digest() + ", " +
              nvcc_options_rules_version() + ", " + class_attributes_rules_version();
  int n = 0;
  check(nvrtc().GetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  archs_.resize(static_cast<std::size_t>(n));
  if (n > 0)
    check(nvrtc().GetSupportedArchs(archs_.data()), "nvrtcGetSupportedArchs");
  std::sort(archs_.begin(), archs_.end());
  toolkit_includes_ = find_toolkit_includes(lib.major);
  // Ctrl-C while NVRTC parses must not end the process (signal_guard.hpp).
  if (std::string why =
          keep_nvrtc_off_interrupt_signals(reinterpret_cast<const void *>(lib.CompileProgram));
      !why.empty())
    log_warning(log_component::compile,
                "nvrtc: Ctrl-C or SIGTERM while NVRTC parses a source will end the process (its "
                "handlers replace the process's for the compile): " +
                    why);
}

std::vector<std::string>
nvrtc_compiler::builtin_options(const compile_request &r,
                                const std::vector<std::string> &user) const {
  std::vector<std::string> out;
  if (!has_option(user, {"-arch", "--gpu-architecture"})) {
    // NVRTC has no -code: the real architecture asked for is the one a cubin is made for.
    const bool use_code = !r.code.empty() && r.target == image_format::cubin;
    const std::string &arch = use_code ? r.code : r.arch;
    if (arch.empty()) {
      if (r.target == image_format::cubin)
        throw config_error("nvrtc needs a GPU architecture to produce cubin (e.g. arch sm_90); "
                           "none was given");
    } else {
      gpu_arch a = parse_arch(arch);
      check_supported_arch(a, archs_, version_, use_code ? "code" : "arch");
      std::string prefix = r.target == image_format::cubin ? "sm_" : "compute_";
      out.push_back("-arch=" + prefix + std::to_string(a.number) + a.suffix);
    }
  }
  if (r.target == image_format::ltoir && !has_option(user, {"-dlto", "--dlto"}))
    out.emplace_back("-dlto");
  if (r.relocatable && !has_option(user, {"-rdc", "--relocatable-device-code", "-dc"}))
    out.emplace_back("-rdc=true");
  if (r.debug && !has_option(user, {"-G", "--device-debug"}))
    out.emplace_back("-G");
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

compile_inputs nvrtc_compiler::scan(const compile_request &r,
                                    const std::vector<std::string> &opts) const {
  include_search s;
  s.source = r.source;
  s.source_name = r.source_name;
  const std::set<std::string> toolkit(toolkit_includes_.begin(), toolkit_includes_.end());
  for (std::size_t i = 0; i < opts.size(); ++i) {
    const std::string &o = opts[i];
    std::string v;
    if (option_value(opts, i, {"--include-path=", "-I"}, {"-I", "--include-path"}, v)) {
      s.dirs.push_back({v, toolkit.count(v) != 0});
    } else if (option_value(opts, i, {"--pre-include=", "-include="}, {"-include", "--pre-include"},
                            v)) {
      s.pre_includes.push_back(v);
    } else if (option_value(opts, i, {"--define-macro=", "-D"}, {"-D", "--define-macro"}, v)) {
      s.macros.push_back(v);
    } else if (o == "--no-source-include" || o == "-no-source-include") {
      s.search_source_dir = false;
    } else if (starts_with(o, "-pch") || starts_with(o, "--pch") || starts_with(o, "-use-pch") ||
               starts_with(o, "--use-pch") || starts_with(o, "-create-pch") ||
               starts_with(o, "--create-pch")) {
      compile_inputs unknown;
      unknown.unknown_reason = "precompiled headers (" + o +
                               ") are read from files cuplug "
                               "cannot list";
      return unknown;
    }
  }
  return scan_includes(s);
}

compiled_image nvrtc_compiler::do_compile(const compile_request &r) {
  if (r.target == image_format::fatbin)
    throw not_supported("nvrtc produces cubin, PTX or LTO-IR, not fatbin; use target 'cubin' "
                        "or the nvcc backend");
  const std::vector<std::string> user = nvrtc_options_from_nvcc(r.options);
  std::vector<std::string> opts = builtin_options(r, user);
  opts.insert(opts.end(), user.begin(), user.end());

  compiled_image out;
  out.format = r.target;
  out.command = "nvrtc " + join(opts) + " " + r.source_name;
  // Read before compiling: a header edited meanwhile then differs from what the cache records.
  out.inputs = scan(r, opts);
  const std::string file = source_file_name(r.source_name);
  if (r.keep_files) {
    out.kept_directory = make_work_directory(r.keep_directory, "cuplug-nvrtc-");
    write_file(out.kept_directory + "/" + file, r.source);
  }

  flow_control flow;
  flow.cancelled = &r.cancelled;
  const double timeout = compile_timeout(timeout_option_);
  if (timeout > 0)
    flow.deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(timeout));
  program p;
  // After the scan: the in-memory headers are no files of the user's.
  std::vector<const std_header *> headers = std_headers_for(opts, toolkit_includes_, r.source_name);
  headers.push_back(&nvcc_names_header());
  std::vector<std::string> compile_opts = opts;
  compile_opts.insert(compile_opts.end(), {"-include", nvcc_names_header().name});
  // GCC's (and nvcc's) reading of `struct s { ... } __align__(16) t;` (class_attributes.hpp).
  const std::string source = class_attributes_after_key(r.source);
  nvrtcResult res =
      compile_program(p, source, r.source_name, compile_opts, r.name_expressions, &flow, headers);
  out.log = program_log(p.handle);
  if (res == NVRTC_ERROR_CANCELLED || flow.timed_out || flow.was_cancelled) {
    if (flow.timed_out)
      throw compile_error("nvrtc did not finish compiling " + r.source_name + " within " +
                              seconds_text(timeout) +
                              " s and was stopped; raise the limit with the nvrtc option "
                              "timeout or CUPLUG_COMPILE_TIMEOUT (seconds, 0 for none)",
                          out.log, out.command);
    throw compile_error("nvrtc compilation of " + r.source_name + " was cancelled", out.log,
                        out.command);
  }
  if (res == NVRTC_ERROR_INVALID_OPTION) {
    auto bad = rejected_options(opts);
    std::string what =
        bad.empty() ? "the options '" + join(opts) + "'"
                    : "option" + std::string(bad.size() > 1 ? "s" : "") + " '" + join(bad) + "'";
    throw config_error("nvrtc does not accept " + what +
                       (out.log.empty() ? std::string() : " (" + out.log + ")") +
                       "; use NVRTC's spellings (e.g. --use_fast_math, -D<macro>) or compile with "
                       "the nvcc backend");
  }
  if (res != NVRTC_SUCCESS) {
    std::string log = out.log.empty() ? std::string(nvrtc().GetErrorString(res)) : out.log;
    throw compile_error("nvrtc compilation of " + r.source_name + " failed", log, out.command);
  }

  std::size_t size = 0;
  switch (r.target) {
  case image_format::cubin:
    if (nvrtc().GetCUBINSize(p.handle, &size) != NVRTC_SUCCESS || size == 0)
      throw compile_error(
          "nvrtc produced no cubin for " + r.source_name +
              ": the architecture option names a virtual architecture (compute_XX); "
              "use sm_XX",
          out.log, out.command);
    out.data.resize(size);
    check(nvrtc().GetCUBIN(p.handle, out.data.data()), "nvrtcGetCUBIN");
    break;
  case image_format::ptx:
    check(nvrtc().GetPTXSize(p.handle, &size), "nvrtcGetPTXSize");
    out.data.resize(size);
    check(nvrtc().GetPTX(p.handle, out.data.data()), "nvrtcGetPTX");
    while (!out.data.empty() && out.data.back() == '\0')
      out.data.pop_back();
    break;
  case image_format::ltoir:
    check(nvrtc().GetLTOIRSize(p.handle, &size), "nvrtcGetLTOIRSize");
    out.data.resize(size);
    check(nvrtc().GetLTOIR(p.handle, out.data.data()), "nvrtcGetLTOIR");
    break;
  case image_format::fatbin:
    break; // refused above
  }

  for (const auto &e : r.name_expressions) {
    const char *lowered = nullptr;
    if (nvrtc().GetLoweredName(p.handle, e.c_str(), &lowered) != NVRTC_SUCCESS || !lowered)
      throw compile_error("nvrtc could not lower the name expression '" + e + "'", out.log,
                          out.command);
    out.lowered_names[e] = lowered;
  }
  if (r.keep_files)
    write_file(out.kept_directory + "/" + fs::path(file).stem().string() + "." +
                   to_string(r.target),
               out.data);
  return out;
}

} // namespace cuplug::plugins

CUPLUG_PLUGIN(compiler, cuplug::plugins::nvrtc_compiler, "nvrtc",
              "NVRTC: compiles CUDA C++ in process to cubin, PTX or LTO-IR; option timeout",
              CUPLUG_PLUGIN_VERSION)
