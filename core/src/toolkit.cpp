// The CUDA toolkit search order (cuplug/toolkit.hpp) and the preloading of the toolkit libraries
// plugins link.
#include <cuplug/toolkit.hpp>

#include <cuplug/driver_api.hpp>
#include <cuplug/log.hpp>

#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

// The build's CUDA major version (13): the toolkit looked for first when no driver says.
constexpr int build_major = CUDA_VERSION / 1000;

// The number `text` holds after `prefix` when that is all it holds ("cu13" -> 13), else 0. No
// std::regex here or below: this runs while the first plugin loads, and the two regexes that
// stood here killed the process there on the GPU machine (SIGSEGV in toolkit_roots whenever a
// wheel folder without a libcudart/libnvrtc reached the folder-name match: nvidia/curand,
// nvidia/cuda_cccl, nvidia/cu13 of a test). The same regex in a small program there did not
// crash; without them the crash is gone (H200, 2026-11-28).
int digits_after(const std::string &text, const std::string &prefix) {
  if (text.rfind(prefix, 0) != 0)
    return 0;
  const std::string rest = text.substr(prefix.size());
  if (rest.empty() || rest.size() > 3 || !std::all_of(rest.begin(), rest.end(), ::isdigit))
    return 0;
  return std::stoi(rest);
}

// The major version in a soname "libcudart.so.12" (0 for others).
int soname_major(const std::string &name, const std::string &stem) {
  return digits_after(name, stem + ".so.");
}

// The CUDA major version a toolkit's version.json names: the digits that open the "version" of
// its "cuda" object, {"cuda": {"name": "CUDA SDK", "version": "13.0.2"}, ...}; 0 when it has none.
int version_json_major(const std::string &json) {
  // Where `want` stands after `from`, past white space; npos when something else does.
  auto next = [&json](std::size_t from, char want) {
    const std::size_t at = json.find_first_not_of(" \t\r\n", from);
    return at != std::string::npos && json[at] == want ? at : std::string::npos;
  };
  const std::size_t key = json.find("\"cuda\"");
  const std::size_t colon = key == std::string::npos ? key : next(key + 6, ':');
  const std::size_t open = colon == std::string::npos ? colon : next(colon + 1, '{');
  if (open == std::string::npos)
    return 0;
  const std::size_t version = json.find("\"version\"", open);
  if (version == std::string::npos || version > json.find('}', open))
    return 0;
  const std::size_t colon2 = next(version + 9, ':');
  const std::size_t quote = colon2 == std::string::npos ? colon2 : next(colon2 + 1, '"');
  const std::size_t dot = quote == std::string::npos ? quote : json.find('.', quote);
  if (dot == std::string::npos)
    return 0;
  return digits_after(json.substr(quote + 1, dot - quote - 1), "");
}

} // namespace

int toolkit_cuda_major(const std::string &root) {
  const fs::path dir(root);
  // version.json: {"cuda": {"name": "CUDA SDK", "version": "13.0.2"}, ...}
  if (std::ifstream f(dir / "version.json"); f) {
    std::stringstream text;
    text << f.rdbuf();
    if (int major = version_json_major(text.str()); major > 0)
      return major;
  }
  for (const auto &lib_dir : toolkit_library_dirs(root)) {
    std::error_code ec;
    for (fs::directory_iterator it(lib_dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      for (const char *stem : {"libcudart", "libnvrtc"})
        if (int major = soname_major(name, stem); major > 0)
          return major;
    }
  }
  fs::path normal = dir.lexically_normal();
  if (!normal.has_filename()) // "site/nvidia/cu13/"
    normal = normal.parent_path();
  const std::string leaf = normal.filename().string();
  const std::string parent = normal.parent_path().filename().string();
  if (parent == "nvidia") {
    if (int major = digits_after(leaf, "cu"); major > 0) // nvidia/cu13
      return major;
    return 12; // nvidia/cuda_nvrtc, nvidia/curand, ...: the CUDA 12 wheels' layout
  }
  return 0;
}

toolkit_choice wanted_toolkit() {
  if (const char *v = std::getenv("CUPLUG_TOOLKIT_MAJOR"); v != nullptr && *v != '\0') {
    const std::string text(v);
    if (text == "12" || text == "13")
      return {std::stoi(text), "CUPLUG_TOOLKIT_MAJOR=" + text};
    static std::once_flag warned;
    log_deferral deferred; // the once flag is a lock: the message waits until it is released
    std::call_once(warned, [&] {
      std::string shown;
      for (char c : text.substr(0, 40))
        shown += std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c) : "?";
      log_warning(log_component::compile,
                  "CUPLUG_TOOLKIT_MAJOR='" + shown +
                      "' is not 12 or 13; ignored (the driver's CUDA version decides)");
    });
  }
  try {
    const int version = driver_version();
    std::string why = "the driver is CUDA " + cuda_version_text(version);
    if (std::string branch = driver_branch(version); !branch.empty())
      why += " (" + branch + ")";
    return {version / 1000, why};
  } catch (...) {
    return {0, "no usable driver: any toolkit, CUDA " + std::to_string(build_major) + " first"};
  }
}

std::vector<toolkit_root> toolkit_roots(bool all) {
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
  for (auto &root : out)
    root.cuda_major = toolkit_cuda_major(root.path);
  if (all)
    return out;
  // A CUDA 12 driver cannot load what a CUDA 13 toolkit makes: such folders are left out. The
  // order is otherwise kept: the user's $CUDA_PATH stays first, and a CUDA 13 driver runs what an
  // older toolkit there makes.
  if (const int wanted = wanted_toolkit().major; wanted != 0)
    out.erase(std::remove_if(out.begin(), out.end(),
                             [wanted](const toolkit_root &r) { return r.cuda_major > wanted; }),
              out.end());
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
  log_deferral deferred; // as above: wanted_toolkit() may warn
  std::call_once(once, [] {
#ifdef CUPLUG_TOOLKIT_SONAMES
    const std::vector<std::string> sonames = split(CUPLUG_TOOLKIT_SONAMES, ':');
#else
    const std::vector<std::string> sonames;
#endif
    const toolkit_choice wanted = wanted_toolkit();
    report.push_back(
        "toolkit: " + (wanted.major != 0 ? "CUDA " + std::to_string(wanted.major) : "any") + " (" +
        wanted.why + ")");
    const std::vector<toolkit_root> roots = toolkit_roots();
    for (const auto &built : sonames) {
      // libnvrtc.so.13 is CUDA 13's; a CUDA 12 driver needs libnvrtc.so.12.
      std::vector<std::string> names{built};
      const std::string stem = built.substr(0, built.find(".so."));
      if (soname_major(built, stem) == build_major) {
        names.clear();
        for (int major = wanted.major != 0 ? wanted.major : build_major; major >= 12; --major)
          names.push_back(stem + ".so." + std::to_string(major));
      }
      std::string line = names.front() + ": left to the dynamic loader (in no toolkit folder)";
      bool done = false;
      for (const auto &soname : names) {
        for (const auto &root : roots) {
          for (const auto &dir : toolkit_library_dirs(root.path)) {
            const fs::path lib = fs::path(dir) / soname;
            if (!is_file(lib))
              continue;
            // Never closed: plugins linked to it keep using it. RTLD_LOCAL is enough: the
            // dynamic loader matches a plugin's DT_NEEDED (or dlopen by soname) against the
            // sonames of libraries already loaded.
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
        if (done)
          break;
      }
      report.push_back(line);
    }
  });
  return report;
}

} // namespace cuplug
