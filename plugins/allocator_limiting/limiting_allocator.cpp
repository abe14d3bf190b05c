// The "limiting" allocator: an adaptor that caps the bytes in use through it.
#include <cuplug/allocator.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/options.hpp>
#include <cuplug/plugin.hpp>
#include <cuplug/pool/make_upstream.hpp>

#include <atomic>
#include <string>

namespace cuplug::plugins {
namespace {

std::size_t required_limit(const options &opts) {
  if (!opts.contains("limit"))
    throw config_error("allocator 'limiting': option 'limit' is required (a byte size such as "
                       "'2GiB' or '1048576')");
  return opts.get_bytes("limit", 0);
}

// Requests that would take the bytes in use (requested sizes of live allocations made through
// this adaptor) above `limit` fail with out_of_memory naming the limit, as a full device would;
// everything else goes to `upstream` (default "device"), which also answers for held memory,
// free_held and trim.
class limiting_allocator final : public allocator {
public:
  explicit limiting_allocator(const options &opts)
      : limit_(required_limit(opts)), upstream_(pool::make_upstream(opts, "limiting")) {}

protected:
  std::size_t do_bytes_held() const override { return upstream_->stats().bytes_held; }

private:
  device_ptr do_allocate(std::size_t bytes, CUstream stream) override {
    std::size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > limit_ || used > limit_ - bytes)
        throw out_of_memory("limiting_allocator::allocate", bytes, used,
                            upstream_->stats().bytes_held, limit_);
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    try {
      return upstream_->allocate(bytes, stream);
    } catch (...) {
      used_.fetch_sub(bytes, std::memory_order_relaxed);
      throw;
    }
  }

  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) override {
    upstream_->deallocate(ptr, bytes, stream);
    used_.fetch_sub(bytes, std::memory_order_relaxed);
  }

  memory_kind do_kind() const override { return upstream_->kind(); }
  bool do_can_free_held() const override { return upstream_->can_free_held(); }
  std::size_t do_free_held() override { return upstream_->free_held(); }
  std::size_t do_trim(std::size_t keep_bytes) override { return upstream_->trim(keep_bytes); }

  const std::size_t limit_;
  plugin_ptr<allocator> upstream_;
  std::atomic<std::size_t> used_{0};
};

} // namespace
} // namespace cuplug::plugins

CUPLUG_PLUGIN(allocator, cuplug::plugins::limiting_allocator, "limiting",
              "adaptor capping the bytes in use (options: upstream, limit)", CUPLUG_PLUGIN_VERSION)
