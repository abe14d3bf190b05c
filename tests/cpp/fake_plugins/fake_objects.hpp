// Minimal objects of every plugin kind for loader tests: they work on the host, need no driver.
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/compiler.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/interop.hpp>
#include <cuplug/launcher.hpp>
#include <cuplug/rng.hpp>

#include <atomic>
#include <cstdlib>
#include <stdexcept>

namespace fake_plugins {

// Objects alive in this plugin, read by the tests through fake_live_objects() to check that the
// core destroys what it creates (and destroys it inside the plugin).
inline std::atomic<int> live_objects{0};

struct counted {
  counted() { ++live_objects; }
  ~counted() { --live_objects; }
};

// Host memory; reads two options so the tests can check option tracking.
class host_allocator : public cuplug::allocator, counted {
public:
  explicit host_allocator(const cuplug::options &o)
      : capacity_(o.get_bytes("capacity", 1 << 20)), label_(o.get_string("label", "")) {}

private:
  cuplug::device_ptr do_allocate(std::size_t bytes, CUstream) override {
    if (bytes > capacity_)
      throw cuplug::out_of_memory("host_allocator", bytes, 0, 0, capacity_);
    return reinterpret_cast<std::uintptr_t>(std::malloc(bytes));
  }
  void do_deallocate(cuplug::device_ptr p, std::size_t, CUstream) override {
    std::free(reinterpret_cast<void *>(p));
  }
  cuplug::memory_kind do_kind() const override { return cuplug::memory_kind::host; }
  std::size_t capacity_;
  std::string label_;
};

class echo_compiler : public cuplug::compiler, counted {
public:
  explicit echo_compiler(const cuplug::options &) {}

private:
  cuplug::compiled_image do_compile(const cuplug::compile_request &r) override {
    cuplug::compiled_image out;
    out.format = cuplug::image_format::ptx;
    out.data = r.source;
    return out;
  }
  std::string do_version() const override { return "echo 1"; }
  std::vector<int> do_supported_archs() const override { return {90}; }
};

class null_launcher : public cuplug::launcher, counted {
public:
  explicit null_launcher(const cuplug::options &) {}

private:
  CUmodule do_load_module(const void *, std::size_t, const std::vector<cuplug::jit_option> &,
                          std::string *) override {
    throw cuplug::not_supported("null launcher loads nothing");
  }
  CUmodule do_load_module_file(const std::string &) override {
    throw cuplug::not_supported("null launcher loads nothing");
  }
  void do_unload_module(CUmodule) override {}
  CUfunction do_get_function(CUmodule, const std::string &) override { return nullptr; }
  std::pair<cuplug::device_ptr, std::size_t> do_get_global(CUmodule, const std::string &) override {
    return {0, 0};
  }
  void do_launch(CUfunction, const cuplug::launch_config &, void *, std::size_t) override {}
  int do_function_attribute(CUfunction, CUfunction_attribute) override { return 0; }
  void do_set_function_attribute(CUfunction, CUfunction_attribute, int) override {}
  int do_max_active_blocks_per_multiprocessor(CUfunction, int, std::size_t) override { return 1; }
};

class counter_rng : public cuplug::rng, counted {
public:
  explicit counter_rng(const cuplug::options &) {}

private:
  void do_seed(std::uint64_t) override { offset_ = 0; }
  void do_set_offset(std::uint64_t o) override { offset_ = o; }
  std::uint64_t do_offset() const override { return offset_; }
  bool do_supports(cuplug::rng_distribution, cuplug::rng_dtype) const override { return false; }
  void do_generate(cuplug::rng_distribution, cuplug::rng_dtype, cuplug::device_ptr,
                   std::size_t count, const cuplug::rng_params &, CUstream) override {
    offset_ += count;
  }
  std::uint64_t offset_ = 0;
};

class null_interop : public cuplug::interop, counted {
public:
  explicit null_interop(const cuplug::options &) {}

private:
  void do_initialize() override {}
  CUgraphicsResource do_register_buffer(std::uint32_t, cuplug::interop_flags) override {
    return nullptr;
  }
  CUgraphicsResource do_register_image(const cuplug::gl_image &, cuplug::interop_flags) override {
    return nullptr;
  }
  void do_unregister(CUgraphicsResource) override {}
  void do_map(const CUgraphicsResource *, std::size_t, CUstream) override {}
  void do_unmap(const CUgraphicsResource *, std::size_t, CUstream) override {}
  cuplug::mapped_buffer do_mapped_pointer(CUgraphicsResource) override { return {}; }
  CUarray do_mapped_array(CUgraphicsResource, unsigned, unsigned) override { return nullptr; }
};

// Its constructor always fails, as a plugin whose device or dependency is missing would.
class throwing_allocator : public host_allocator {
public:
  explicit throwing_allocator(const cuplug::options &o) : host_allocator(o) {
    throw std::runtime_error("no fake device in this machine");
  }
};

} // namespace fake_plugins

// Lets a test read how many objects of this plugin are alive (dlsym on the loaded library).
extern "C" __attribute__((visibility("default"))) int fake_live_objects() {
  return fake_plugins::live_objects.load();
}
