// A second pool-kind plugin for the tests, "exact_pool": reuses a freed block only for a request
// of exactly its size, with none of the pool kit's size classes. Swapping it in for "pool" shows
// that DeviceMemoryPool does what its pool backend does.
#include <cuplug/allocator.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/options.hpp>
#include <cuplug/plugin.hpp>
#include <cuplug/pool/make_upstream.hpp>

#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace cuplug::test {
namespace {

// Stream order is kept the simple way: a held block goes only to the stream that freed it.
// Thread-safe: one mutex; upstream calls run outside it.
class exact_pool final : public allocator {
public:
  explicit exact_pool(const options &opts) : upstream_(pool::make_upstream(opts, "exact_pool")) {}
  ~exact_pool() override { release_all(); }

protected:
  std::size_t do_bytes_held() const override { return counters().held_bytes; }

private:
  using key = std::pair<std::size_t, CUstream>;

  device_ptr do_allocate(std::size_t bytes, CUstream stream) override {
    if (device_ptr p = take(bytes, stream))
      return p;
    device_ptr p = 0;
    try {
      p = upstream_->allocate(bytes, stream);
    } catch (const out_of_memory &) {
      if (hook_)
        hook_();
      if (device_ptr again = take(bytes, stream))
        return again;
      release_all();
      p = upstream_->allocate(bytes, stream);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.active_blocks;
    stats_.active_bytes += bytes;
    stats_.managed_bytes += bytes;
    return p;
  }

  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --stats_.active_blocks;
      stats_.active_bytes -= bytes;
      if (holding_) {
        held_[{bytes, stream}].push_back(ptr);
        ++stats_.held_blocks;
        stats_.held_bytes += bytes;
        say("exact_pool: kept a block of %zu bytes\n", bytes);
        return;
      }
      stats_.managed_bytes -= bytes;
    }
    upstream_->deallocate(ptr, bytes, stream);
  }

  device_ptr take(std::size_t bytes, CUstream stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = held_.find({bytes, stream});
    if (it == held_.end() || it->second.empty())
      return 0;
    const device_ptr p = it->second.back();
    it->second.pop_back();
    --stats_.held_blocks;
    stats_.held_bytes -= bytes;
    ++stats_.active_blocks;
    stats_.active_bytes += bytes;
    say("exact_pool: reused a block of %zu bytes\n", bytes);
    return p;
  }

  std::size_t release_all() {
    std::map<key, std::vector<device_ptr>> victims;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      victims.swap(held_);
      stats_.managed_bytes -= stats_.held_bytes;
      stats_.held_blocks = 0;
      stats_.held_bytes = 0;
    }
    std::size_t released = 0;
    for (const auto &[k, blocks] : victims)
      for (device_ptr p : blocks) {
        upstream_->deallocate(p, k.first, k.second);
        released += k.first;
      }
    return released;
  }

  pool_stats counters() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void say(const char *format, std::size_t bytes) const {
    if (trace_ > 0)
      std::printf(format, bytes);
  }

  memory_kind do_kind() const override { return upstream_->kind(); }
  bool do_can_free_held() const override { return true; }
  std::size_t do_free_held() override { return release_all(); }
  // Coarse, as a test plugin may be: all or nothing.
  std::size_t do_trim(std::size_t keep_bytes) override {
    return counters().held_bytes > keep_bytes ? release_all() : 0;
  }
  std::optional<pool_stats> do_pool_statistics() const override { return counters(); }
  void do_stop_holding() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      holding_ = false;
    }
    release_all();
  }
  void do_set_trace(bool on) override { trace_ += on ? 1 : -1; }
  void do_set_out_of_memory_hook(out_of_memory_hook hook) override { hook_ = std::move(hook); }

  plugin_ptr<allocator> upstream_;
  out_of_memory_hook hook_;
  int trace_ = 0;
  mutable std::mutex mutex_;
  bool holding_ = true;
  pool_stats stats_;
  std::map<key, std::vector<device_ptr>> held_;
};

} // namespace
} // namespace cuplug::test

CUPLUG_PLUGIN(allocator, cuplug::test::exact_pool, "exact_pool",
              "test pool: reuses a block only for a request of exactly its size", "1.0")
