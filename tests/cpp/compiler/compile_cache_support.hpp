// The compile cache tests' shared pieces: an in-process compiler that counts its calls, a base
// request, a fresh cache per case, cache folders in temporary directories.
#pragma once

#include "cache_entry.hpp"
#include "cache_key.hpp"
#include "sha256.hpp"
#include "test_support.hpp"

#include <cuplug/compile_cache.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/gpu_arch.hpp>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace cuplug; // a test header: the cases name the cache's types unqualified

namespace cuplug { // so Boost.Test can print them
inline std::ostream &operator<<(std::ostream &os, cache_hit h) { return os << to_string(h); }
inline std::ostream &operator<<(std::ostream &os, disk_cache_status::state s) {
  return os << to_string(s);
}
inline std::ostream &operator<<(std::ostream &os, image_format f) { return os << to_string(f); }
} // namespace cuplug

namespace cache_test {

// Deterministic: the image is the request spelled out, and the content of each file it says it
// read, so a wrong hit shows in the data. It reports `inputs` as what it read.
class counting_compiler final : public compiler {
public:
  explicit counting_compiler(std::string version = "1.0") : version_(std::move(version)) {
    inputs.known = true;
  }
  std::atomic<int> calls{0};
  compile_inputs inputs;
  std::function<void()> while_compiling; // runs inside do_compile

private:
  compiled_image do_compile(const compile_request &r) override {
    ++calls;
    compiled_image out;
    out.format = r.target;
    out.data = "IMAGE[" + r.arch + "]" + r.source;
    for (const auto &f : inputs.files)
      out.data += "|" + test_support::read_file(f);
    out.log = r.source.find("warn") != std::string::npos ? "kernel.cu(1): warning: careful" : "";
    out.command = "count " + r.source_name;
    for (const auto &e : r.name_expressions)
      out.lowered_names[e] = "_lowered_" + e;
    out.inputs = inputs;
    if (while_compiling)
      while_compiling();
    return out;
  }
  std::string do_version() const override { return version_; }
  std::vector<int> do_supported_archs() const override { return {75, 80, 86, 89, 90}; }
  std::string version_;
};

inline std::shared_ptr<counting_compiler> make_compiler(const std::string &name = "counting",
                                                        const std::string &version = "1.0") {
  auto c = std::make_shared<counting_compiler>(version);
  c->set_backend_name(name);
  return c;
}

inline compile_request base_request() {
  compile_request r;
  r.source = "__global__ void k(float *a) { a[0] = 1; }\n";
  r.arch = "sm_90";
  return r;
}

inline std::string key_of(const plugin_ptr<compiler> &c, const compile_request &r) {
  return compile_cache_key(cache_request(c, r));
}

// Every case starts from an empty memory layer and no cache-related environment.
struct fresh_cache {
  fresh_cache() {
    ::unsetenv("CUPLUG_DISABLE_CACHE");
    ::unsetenv("CUPLUG_CACHE_MAX_SIZE");
    compile_cache::instance().clear_memory();
  }
  ~fresh_cache() {
    ::unsetenv("CUPLUG_DISABLE_CACHE");
    ::unsetenv("CUPLUG_CACHE_MAX_SIZE");
  }
};

inline cache_policy in(const test_support::temp_dir &dir, const std::string &sub = "cache") {
  cache_policy p;
  p.directory = (dir.path() / sub).string();
  return p;
}

// Writes a file that looks written long ago: the cache does not record a file written just before
// a compile (file times lag the clock), and tests want their compiles recorded.
inline fs::path write_old(const test_support::temp_dir &dir, const std::string &name,
                          const std::string &text) {
  fs::path p = dir.write(name, text);
  fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::seconds(30));
  return p;
}

inline fs::path entries_dir(const cache_policy &p) {
  return fs::path(p.directory) / compile_cache::entries_subdir;
}

inline std::vector<fs::path> entry_files(const cache_policy &p) {
  std::vector<fs::path> out;
  for (auto &e : fs::directory_iterator(entries_dir(p)))
    out.push_back(e.path());
  return out;
}

inline unsigned mode_of(const fs::path &p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

} // namespace cache_test
