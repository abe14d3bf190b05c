// The CUDA toolkit search order (cuplug/toolkit.hpp) and the preloading of the toolkit libraries
// plugins link.
#include <cuplug/toolkit.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>

namespace fs = std::filesystem;

namespace cuplug {
namespace {

bool is_dir(const fs::path &p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool is_file(const fs::path &p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec); // follows links
}

std::vector<std::string> split(const std::string &text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep))
    if (!item.empty())
      out.push_back(item);
  return out;
}

// The first executable `nvcc` in a PATH folder, as PATH names it.
fs::path nvcc_on_path() {
  const char *path = std::getenv("PATH");
  if (path == nullptr)
    return {};
  for (const auto &dir : split(path, ':')) {
    fs::path candidate = fs::path(dir) / "nvcc";
    if (is_file(candidate) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return {};
}

// Libraries `soname` opens by name itself, from the folder it was loaded from: libnvrtc opens
// libnvrtc-builtins.so.<major>.<minor>, which the dynamic loader would otherwise look for in its
// own places (another toolkit's may not match). Returns " + name" for each loaded.
std::string load_companions(const fs::path &dir, const std::string &soname) {
  const std::string prefix = soname.substr(0, soname.find(".so")) + "-builtins.so.";
  std::string out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) == 0 && ::dlopen(it->path().c_str(), RTLD_NOW | RTLD_LOCAL))
      out += " + " + name;
  }
  return out;
}

} // namespace

std::vector<toolkit_root> toolkit_roots() {
  std::vector<toolkit_root> out;
  std::vector<fs::path> seen; // links resolved: /usr/local/cuda and its target are one folder
  auto add = [&](const fs::path &dir, const std::string &origin) {
    if (dir.empty() || !is_dir(dir))
      return;
    std::error_code ec;
    const fs::path real = fs::canonical(dir, ec);
    if (ec || std::find(seen.begin(), seen.end(), real) != seen.end())
      return;
    seen.push_back(real);
    out.push_back({dir.lexically_normal().string(), origin});
  };
  for (const char *var : {"CUDAToolkit_ROOT", "CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"})
    if (const char *v = std::getenv(var); v != nullptr && *v != '\0')
      add(v, std::string("$") + var);
  if (const char *wheels = std::getenv("CUPLUG_TOOLKIT_WHEELS"))
    for (const auto &dir : split(wheels, ':'))
      add(dir, "pip wheel");
  if (fs::path nvcc = nvcc_on_path(); !nvcc.empty()) {
    if (nvcc.parent_path().filename() == "bin")
      add(nvcc.parent_path().parent_path(), "nvcc on PATH");
    std::error_code ec;
    fs::path real = fs::canonical(nvcc, ec);
    if (!ec && real.parent_path().filename() == "bin")
      add(real.parent_path().parent_path(), "nvcc on PATH");
  }
  add("/usr/local/cuda", "default");
#ifdef CUPLUG_BUILD_CUDA_ROOT
  add(CUPLUG_BUILD_CUDA_ROOT, "build");
#endif
  return out;
}

std::vector<std::string> toolkit_library_dirs(const std::string &root) {
  std::vector<std::string> out;
  for (const char *sub : {"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib",
                          "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"})
    if (is_dir(fs::path(root) / sub))
      out.push_back((fs::path(root) / sub).string());
  return out;
}

std::string toolkit_include_dir(const std::string &root) {
  for (const char *sub : {"include", "targets/x86_64-linux/include", "targets/sbsa-linux/include"})
    if (is_file(fs::path(root) / sub / "cuda.h"))
      return (fs::path(root) / sub).string();
  return {};
}

const std::vector<std::string> &preload_toolkit_libraries() {
  static std::once_flag once;
  static std::vector<std::string> report;
  std::call_once(once, [] {
#ifdef CUPLUG_TOOLKIT_SONAMES
    const std::vector<std::string> sonames = split(CUPLUG_TOOLKIT_SONAMES, ':');
#else
    const std::vector<std::string> sonames;
#endif
    const std::vector<toolkit_root> roots = toolkit_roots();
    for (const auto &soname : sonames) {
      std::string line = soname + ": left to the dynamic loader (in no toolkit folder)";
      bool done = false;
      for (const auto &root : roots) {
        for (const auto &dir : toolkit_library_dirs(root.path)) {
          const fs::path lib = fs::path(dir) / soname;
          if (!is_file(lib))
            continue;
          // Never closed: plugins linked to it keep using it. RTLD_LOCAL is enough: the dynamic
          // loader matches a plugin's DT_NEEDED against the sonames of libraries already loaded.
          if (::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr) {
            line = soname + ": " + lib.string() + " (" + root.origin + ")" +
                   load_companions(fs::path(dir), soname);
          } else {
            const char *why = ::dlerror();
            line = soname + ": " + lib.string() + " (" + root.origin +
                   ") could not be loaded: " + (why != nullptr ? why : "dlopen failed");
          }
          done = true;
          break;
        }
        if (done)
          break;
      }
      report.push_back(line);
    }
  });
  return report;
}

} // namespace cuplug
