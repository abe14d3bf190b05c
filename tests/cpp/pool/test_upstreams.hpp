// Allocators and fences the allocator tests build pools on: host memory that can fake huge
// sizes, an upstream that fails on demand, and fences that record what the pool asked of them.
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/pool/stream_fences.hpp>
#include <cuplug/registry.hpp>

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cuplug::test {

// Host memory; blocks of 1 MiB or more are address space reserved with PROT_NONE and
// MAP_NORESERVE except their first page, so sizes far beyond the machine's memory (> 4 GiB)
// cost nothing. Each block's first 8 bytes are writable, enough for the tests' ownership tags.
class reserving_host final : public allocator {
public:
  reserving_host() { set_backend_name("reserving_host"); }

private:
  static constexpr std::size_t big = std::size_t{1} << 20;
  device_ptr do_allocate(std::size_t bytes, CUstream) override {
    if (bytes < big) {
      void *p = std::aligned_alloc(256, (bytes + 255) & ~std::size_t{255});
      if (!p)
        throw std::bad_alloc();
      return reinterpret_cast<device_ptr>(p);
    }
    void *p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      throw std::bad_alloc();
    mprotect(p, 4096, PROT_READ | PROT_WRITE);
    return reinterpret_cast<device_ptr>(p);
  }
  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream) override {
    if (bytes < big)
      std::free(reinterpret_cast<void *>(ptr));
    else
      munmap(reinterpret_cast<void *>(ptr), bytes);
  }
  memory_kind do_kind() const override { return memory_kind::host; }
};

// Passes through to `inner` until told to fail: out of memory above a byte budget (bytes in use
// through it), on every call while `fail_all` is set, or with another CUDA error while
// `fail_code` is non-zero.
class faulty_upstream final : public allocator {
public:
  explicit faulty_upstream(plugin_ptr<allocator> inner) : inner_(std::move(inner)) {
    set_backend_name("faulty");
  }
  std::atomic<std::size_t> budget{~std::size_t{0}};
  std::atomic<bool> fail_all{false};
  std::atomic<int> fail_code{0};
  std::atomic<std::size_t> calls{0};
  const plugin_ptr<allocator> &inner() const { return inner_; }

private:
  device_ptr do_allocate(std::size_t bytes, CUstream stream) override {
    ++calls;
    if (fail_code.load() != 0)
      throw cuda_error("faulty::allocate", fail_code.load());
    const std::size_t used = stats().bytes_in_use;
    if (fail_all.load() || used + bytes > budget.load())
      throw out_of_memory("faulty::allocate", bytes, used, 0, budget.load());
    return inner_->allocate(bytes, stream);
  }
  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) override {
    inner_->deallocate(ptr, bytes, stream);
  }
  memory_kind do_kind() const override { return inner_->kind(); }
  plugin_ptr<allocator> inner_;
};

// Fences that do nothing but log: fake streams are small integers cast to CUstream, the domain
// is whatever the test sets. Stream 0 is the only persistent one.
class recording_fences final : public pool::stream_fences {
public:
  struct event {
    std::string what; // "record", "wait", "synchronize", "release"
    CUstream stream;
    pool::fence_t fence;
  };
  std::atomic<std::uintptr_t> current_domain{1};
  std::atomic<bool> keep_log{true}; // off for long runs: only the outstanding count is kept

  bool needs_fences() const noexcept override { return true; }
  std::uintptr_t domain() const noexcept override { return current_domain.load(); }
  bool persistent(CUstream s) const noexcept override { return s == nullptr; }
  pool::fence_t record(CUstream s, std::uintptr_t) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const pool::fence_t f = ++next_;
    ++outstanding_;
    if (keep_log)
      log_.push_back({"record", s, f});
    return f;
  }
  void wait(CUstream s, pool::fence_t f) override { add("wait", s, f); }
  void synchronize(pool::fence_t f) override { add("synchronize", nullptr, f); }
  void release(pool::fence_t f) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    --outstanding_;
    if (keep_log)
      log_.push_back({"release", nullptr, f});
  }
  std::vector<event> take_log() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(log_, {});
  }
  long outstanding() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return outstanding_;
  }

private:
  void add(const char *what, CUstream s, pool::fence_t f) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (keep_log)
      log_.push_back({what, s, f});
  }
  mutable std::mutex mutex_;
  std::vector<event> log_;
  pool::fence_t next_ = 0;
  long outstanding_ = 0;
};

inline CUstream fake_stream(std::uintptr_t n) { return reinterpret_cast<CUstream>(n); }

} // namespace cuplug::test
