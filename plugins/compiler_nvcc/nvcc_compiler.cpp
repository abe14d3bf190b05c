// The nvcc compiler plugin: finding nvcc, asking it what it supports, and one compile as steps:
// the program and its checks, the work folder, the command line (nvcc_command.cpp), the run, and
// what nvcc wrote (nvcc_results.cpp).
#include "nvcc_compiler.hpp"

#include "child_process.hpp"
#include "nvcc_command.hpp"
#include "nvcc_results.hpp"
#include "shell_text.hpp"
#include "work_folder.hpp"

#include <cuplug/compiler_support.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/gpu_arch.hpp>
#include <cuplug/plugin.hpp>
#include <cuplug/toolkit.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace cuplug::plugins {
namespace {
namespace fs = std::filesystem;

bool executable(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// `name` itself when it has a slash, else the first match on PATH; empty when none. Always an
// absolute path: the program is started from another directory, where a relative one would
// name something else (or nothing).
std::string find_program(const std::string &name) {
  auto absolute = [](const std::string &p) { return fs::absolute(p).lexically_normal().string(); };
  if (name.find('/') != std::string::npos)
    return executable(name) ? absolute(name) : std::string();
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (executable(candidate))
      return absolute(candidate);
  }
  return {};
}

std::string trim_end(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
    s.pop_back();
  return s;
}

// nvcc keeps its own temporary files in $TMPDIR and fails there with a message naming a file it
// could not open; a TMPDIR it cannot use is said first, by name.
void check_tmpdir() {
  const char *dir = std::getenv("TMPDIR");
  if (dir == nullptr || *dir == '\0')
    return;
  struct stat st {};
  int e = ::stat(dir, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
  if (e == 0 && ::access(dir, W_OK | X_OK) != 0)
    e = errno;
  if (e != 0)
    throw config_error(std::string("TMPDIR=") + dir + " cannot hold nvcc's temporary files (" +
                       std::strerror(e) + "); set TMPDIR to a directory you can write to");
}

// Option text and include dirs that the shell nvcc runs its steps through would act on are
// refused before anything runs (shell_text.hpp).
void refuse_shell_text_in(const compile_request &r) {
  for (std::size_t i = 0; i < r.options.size(); ++i)
    refuse_shell_text(r.options[i], "the option",
                      double_quoted_by_nvcc(r.options[i], i > 0 ? r.options[i - 1] : ""));
  for (const auto &d : r.include_dirs)
    refuse_shell_text(d, "the include directory", true);
}

// The files of one compile, named by absolute paths in its work folder: the source (`name`),
// nvcc's output and its dependency list, named after the source.
nvcc_files files_in(const work_folder &work, const std::string &name, image_format target) {
  const std::string stem = work.path() + "/" + fs::path(name).stem().string();
  nvcc_files f;
  f.work = work.path();
  f.kept = work.kept();
  f.source = work.path() + "/" + name;
  f.output = stem + "." + to_string(target);
  f.deps = stem + ".d";
  return f;
}

// nvcc's stdout and stderr as one log.
std::string log_of(const process_result &p) {
  return trim_end(p.out + (p.out.empty() || p.err.empty() ? "" : "\n") + p.err);
}

} // namespace

nvcc_compiler::nvcc_compiler(const options &opts) {
  timeout_option_ = opts.get_string("timeout", "");
  compile_timeout(timeout_option_); // a bad value fails here, not at the first compile
  std::string given = opts.get_program("nvcc", "");
  std::vector<std::string> tried;
  auto attempt = [&](const std::string &name, const std::string &origin) {
    if (!nvcc_.empty() || name.empty())
      return;
    nvcc_ = find_program(name);
    if (nvcc_.empty())
      tried.push_back(name + " (" + origin + ")");
  };
  if (!given.empty()) {
    attempt(given, "option nvcc");
    if (nvcc_.empty())
      throw config_error("nvcc compiler: option nvcc='" + given +
                         "' is not an executable file, nor found on PATH");
  }
  if (const char *env = std::getenv("NVCC"); env && *env) {
    attempt(env, "$NVCC");
    if (nvcc_.empty())
      throw config_error(std::string("nvcc compiler: NVCC='") + env +
                         "' is not an executable file, nor found on PATH");
  }
  // cuplug's one toolkit search order (cuplug/toolkit.hpp), which includes nvcc on PATH.
  for (const auto &root : toolkit_roots())
    attempt(root.path + "/bin/nvcc", root.origin);
  if (nvcc_.empty()) {
    std::string list;
    for (const auto &t : tried)
      list += (list.empty() ? "" : ", ") + t;
    throw config_error("nvcc compiler: nvcc not found (tried " +
                       (list.empty() ? std::string("no toolkit folder: none exists") : list) +
                       "); set CUDA_PATH to the CUDA toolkit's folder, NVCC=/path/to/nvcc or "
                       "the option compiler.nvcc.nvcc");
  }
}

void nvcc_compiler::probe() const {
  check_tmpdir(); // before call_once: a passing problem must not stay with this object
  std::call_once(probed_, [this] {
    try {
      const std::string cwd = "/";
      run_limits limits;
      limits.timeout_s = compile_timeout(timeout_option_);
      auto run = [&](const char *arg) {
        process_result p = run_process({nvcc_, arg}, cwd, limits);
        if (p.how == process_result::ending::timed_out)
          throw plugin_error(nvcc_ + " " + arg + " did not finish within " +
                             seconds_text(limits.timeout_s) + " s");
        return p;
      };
      process_result v = run("--version");
      if (v.status != 0)
        throw plugin_error(nvcc_ + " --version failed (exit " + std::to_string(v.status) +
                           "): " + trim_end(v.err + v.out));
      // "Cuda compilation tools, release 13.0, V13.0.88" and "Build cuda_13.0.r13.0/compiler.X"
      std::string release, build;
      std::istringstream lines(v.out);
      for (std::string line; std::getline(lines, line);) {
        if (auto p = line.find("release "); p != std::string::npos)
          release = line.substr(p + 8);
        if (starts_with(line, "Build "))
          build = line.substr(6);
      }
      if (release.empty())
        release = trim_end(v.out);
      if (auto comma = release.find(", "); comma != std::string::npos)
        release = release.substr(0, comma) + " (" + release.substr(comma + 2) +
                  (build.empty() ? "" : ", " + build) + ")";
      version_ = "nvcc " + release;

      process_result a = run("--list-gpu-arch");
      if (a.status != 0)
        throw plugin_error(nvcc_ + " --list-gpu-arch failed (exit " + std::to_string(a.status) +
                           "): " + trim_end(a.err + a.out));
      std::istringstream archs(a.out);
      for (std::string line; std::getline(archs, line);) {
        if (!starts_with(line, "compute_"))
          continue;
        try {
          gpu_arch g = parse_arch(line);
          if (g.suffix.empty())
            archs_.push_back(g.number);
        } catch (const config_error &) {
        }
      }
      std::sort(archs_.begin(), archs_.end());
      archs_.erase(std::unique(archs_.begin(), archs_.end()), archs_.end());
    } catch (const std::exception &e) {
      probe_error_ = e.what();
    }
  });
  if (!probe_error_.empty())
    throw plugin_error(probe_error_);
}

std::string nvcc_compiler::do_version() const {
  probe();
  return version_;
}

std::vector<int> nvcc_compiler::do_supported_archs() const {
  probe();
  return archs_;
}

std::string nvcc_compiler::program_for(const compile_request &r) const {
  if (r.program.empty())
    return nvcc_;
  std::string nvcc = find_program(r.program);
  if (nvcc.empty())
    throw config_error("nvcc compiler: nvcc='" + r.program +
                       "' (the program asked for) is not an executable file, nor found on PATH");
  return nvcc;
}

std::string nvcc_compiler::arch_flag(const compile_request &r) const {
  const std::vector<std::string> &user = r.options;
  if (r.arch.empty() ||
      has_option(user, {"-arch", "--gpu-architecture", "-gencode", "--generate-code"}))
    return {};
  const gpu_arch a = parse_arch(r.arch);
  if (r.program.empty())
    check_supported_arch(a, supported_archs(), version_, "arch");
  // With -code, nvcc wants a virtual -arch; PTX output is virtual by nature.
  const bool code = !r.code.empty() || has_option(user, {"-code", "--gpu-code"});
  const bool virtual_arch = r.target == image_format::ptx || code;
  return std::string("-arch=") + (virtual_arch ? "compute_" : "sm_") + std::to_string(a.number) +
         a.suffix;
}

compiled_image nvcc_compiler::do_compile(const compile_request &r) {
  if (r.target == image_format::ltoir)
    throw not_supported("the nvcc backend does not produce standalone LTO-IR; use nvrtc");
  const std::string nvcc = program_for(r);
  check_tmpdir();
  refuse_shell_text_in(r);
  const std::string name = source_file_name(r.source_name);
  // nvcc runs in the caller's directory, so relative paths in options (-I, -isystem, -include)
  // mean what the caller meant; its own files are named by absolute paths in a private dir.
  std::error_code cwd_error;
  const std::string cwd = fs::current_path(cwd_error).string();
  sweep_stale_work_folders();
  work_folder work(r.keep_directory, r.keep_files || user_keeps_files(r.options));
  nvcc_files files = files_in(work, name, r.target);
  refuse_shell_text(files.source, "the path of the source", true);
  files.source = work.write(name, source_with_name_expressions(r));
  const std::vector<std::string> argv = nvcc_command(r, nvcc, arch_flag(r), files);

  compiled_image out;
  out.format = r.target;
  out.command = command_line(argv);
  if (work.kept())
    out.kept_directory = work.path();
  run_limits limits;
  limits.timeout_s = compile_timeout(timeout_option_);
  limits.cancelled = r.cancelled;
  // nvcc's own temporary files (tmpxft_*, megabytes) go into the work folder too, and with it.
  limits.environment = {"TMPDIR=" + work.path()};
  const process_result p = run_process(argv, cwd_error ? work.path() : cwd, limits);
  out.log = log_of(p);
  check_nvcc_ended_well(p, name, work.path(), limits.timeout_s, out);
  if (!read_file(files.output, out.data) || out.data.empty())
    throw compile_error("nvcc reported success but wrote no " +
                            fs::path(files.output).filename().string(),
                        out.log, out.command);
  if (!r.name_expressions.empty())
    out.lowered_names = lowered_names(r, out, work.path());
  out.inputs = nvcc_inputs(r, nvcc, files.deps, work.path(), cwd_error ? "" : cwd);
  return out;
}

} // namespace cuplug::plugins

CUPLUG_PLUGIN(compiler, cuplug::plugins::nvcc_compiler, "nvcc",
              "nvcc: runs the toolkit's nvcc (cubin, PTX, fatbin); options nvcc, timeout",
              CUPLUG_PLUGIN_VERSION)
