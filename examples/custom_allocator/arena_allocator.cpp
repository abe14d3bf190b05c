// An out-of-tree cuplug allocator plugin: bump allocation in one large slab, with its own stats.
#include <cuplug/allocator.hpp>
#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/plugin.hpp>
#include <cuplug/pool/make_upstream.hpp>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <string>

namespace arena {

// Hands out pieces of one slab front to back, aligned as the allocator interface promises
// (cuplug::allocation_alignment: 256 bytes, as cuMemAlloc). Pieces are not reused one by one:
// when the last live piece is freed the whole slab is free again. That suits work done in phases
// (allocate a batch, use it, free it all) and costs a lock and an addition per allocation.
//
// Options:
//   slab_size  bytes of the slab, taken from the upstream at the first allocation (default 256MiB)
//   upstream   the allocator backend the slab comes from (default "device"), read by the SDK's
//              make_upstream, which also guards against cycles and lets the registry create an
//              arena over an allocator object (registry::create_adaptor)
//   report     print the arena's own statistics to stderr when it is destroyed (default false)
class arena_allocator final : public cuplug::allocator {
public:
  explicit arena_allocator(const cuplug::options &opts)
      : slab_size_(opts.get_bytes("slab_size", std::size_t{256} << 20)),
        report_(opts.get_bool("report", false)),
        upstream_(cuplug::pool::make_upstream(opts, "arena")) {
    if (slab_size_ == 0)
      throw cuplug::config_error("allocator 'arena': option 'slab_size' must be at least 1 byte");
  }

  ~arena_allocator() override {
    if (report_)
      std::fprintf(stderr,
                   "arena: slab %zu bytes, high water %zu bytes, %zu resets, %zu refusals, %zu "
                   "blocks live\n",
                   slab_size_, high_water_, resets_, refusals_, live_);
    if (slab_ != 0)
      upstream_->deallocate(slab_, slab_size_, last_stream_);
  }

protected:
  // What the slab has left: memory this arena holds but has not handed out.
  std::size_t do_bytes_held() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return slab_ != 0 ? slab_size_ - offset_ : 0;
  }

private:
  static constexpr std::size_t alignment = cuplug::allocation_alignment;

  cuplug::device_ptr do_allocate(std::size_t bytes, CUstream stream) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t rounded = (bytes + alignment - 1) & ~(alignment - 1);
    if (bytes > slab_size_ || rounded > slab_size_ - offset_) {
      ++refusals_;
      throw cuplug::out_of_memory("arena_allocator::allocate", bytes, live_bytes_,
                                  slab_ != 0 ? slab_size_ - offset_ : slab_size_, slab_size_,
                                  "the slab is full until every block in it is freed");
    }
    if (slab_ == 0)
      slab_ = upstream_->allocate(slab_size_, stream);
    else if (offset_ == 0 && resets_ > 0 && stream != last_stream_ &&
             upstream_->kind() != cuplug::memory_kind::host)
      // The slab was last used by work on another stream: wait for it before handing it out
      // again. Rare (once per phase), so simplicity wins over an event.
      CUPLUG_CALL(cuCtxSynchronize, nullptr);
    const cuplug::device_ptr p = slab_ + offset_;
    offset_ += rounded;
    high_water_ = std::max(high_water_, offset_);
    ++live_;
    live_bytes_ += bytes;
    return p;
  }

  void do_deallocate(cuplug::device_ptr, std::size_t bytes, CUstream stream) override {
    std::lock_guard<std::mutex> lock(mutex_);
    last_stream_ = stream;
    live_bytes_ -= bytes;
    if (--live_ == 0) {
      offset_ = 0; // everything is free: start over at the front
      ++resets_;
    }
  }

  cuplug::memory_kind do_kind() const override { return upstream_->kind(); }

  bool do_can_free_held() const override { return true; }
  // Gives the slab back when nothing in it is live.
  std::size_t do_free_held() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (slab_ == 0 || live_ != 0)
      return 0;
    upstream_->deallocate(slab_, slab_size_, last_stream_);
    slab_ = 0;
    return slab_size_;
  }
  std::size_t do_trim(std::size_t keep_bytes) override {
    return keep_bytes < slab_size_ ? do_free_held() : 0;
  }

  const std::size_t slab_size_;
  const bool report_;
  cuplug::plugin_ptr<cuplug::allocator> upstream_;
  mutable std::mutex mutex_;
  cuplug::device_ptr slab_ = 0;
  std::size_t offset_ = 0;
  std::size_t live_ = 0;       // blocks handed out and not yet freed
  std::size_t live_bytes_ = 0; // their requested bytes
  CUstream last_stream_ = nullptr;
  // The arena's own statistics (the core counts bytes in use, peak and calls for every allocator).
  std::size_t high_water_ = 0; // furthest offset reached in the slab
  std::size_t resets_ = 0;     // times the slab was emptied and reused from the front
  std::size_t refusals_ = 0;   // requests that did not fit
};

} // namespace arena

CUPLUG_PLUGIN(allocator, arena::arena_allocator, "arena",
              "example: bump allocation in one slab, reset when empty", "1.0")
