// The "async" allocator: cuMemAllocFromPoolAsync / cuMemFreeAsync on a CUDA memory pool.
#include <cuplug/allocator.hpp>
#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/options.hpp>
#include <cuplug/plugin.hpp>

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace cuplug::plugins {
namespace {

// `release_threshold`: bytes the pool keeps reserved across synchronisations
// (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD); "max" (the default) keeps everything until free_held() /
// trim(), which is what makes reuse cheap; 0 is the driver's default behaviour.
std::uint64_t release_threshold(const options &opts) {
  const std::string text = opts.get_string("release_threshold", "max");
  if (text == "max" || text == "unlimited")
    return std::numeric_limits<std::uint64_t>::max();
  return opts.get_bytes("release_threshold", 0);
}

// One memory pool per device, made on first use on that device: our own (cuMemPoolCreate, the
// default), or with option `pool = "default"` the device's default pool, shared with every other
// user of cuMemAllocAsync in the process. The driver orders reuse by stream itself.
class async_allocator final : public allocator {
public:
  explicit async_allocator(const options &opts)
      : threshold_(release_threshold(opts)), own_pool_(pool_choice(opts)) {}

  ~async_allocator() override {
    // Outstanding allocations keep a destroyed pool's memory alive until they are freed.
    if (!own_pool_)
      return;
    try {
      for (const auto &[device, e] : pools_)
        driver().cuMemPoolDestroy(e.pool);
    } catch (...) {
    }
  }

protected:
  std::size_t do_bytes_held() const override {
    std::size_t held = 0;
    for (CUmemoryPool pool : snapshot()) {
      cuuint64_t reserved = 0, used = 0;
      CUPLUG_CALL(cuMemPoolGetAttribute, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
      CUPLUG_CALL(cuMemPoolGetAttribute, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
      held += reserved > used ? static_cast<std::size_t>(reserved - used) : 0;
    }
    return held;
  }

private:
  static bool pool_choice(const options &opts) {
    const std::string which = opts.get_string("pool", "own");
    if (which != "own" && which != "default")
      throw config_error("allocator 'async': option 'pool' is '" + which +
                         "', expected 'own' (a pool of this allocator) or 'default' (the " +
                         "device's default pool)");
    return which == "own";
  }

  device_ptr do_allocate(std::size_t bytes, CUstream stream) override {
    CUdevice device = 0;
    CUPLUG_CALL(cuCtxGetDevice, &device, nullptr);
    CUmemoryPool pool = pool_for(device);
    const auto alloc = detail::entry(driver().cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync");
    CUdeviceptr p = 0;
    CUresult r = alloc(&p, bytes, pool, stream);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      // Memory of completed frees that the pool still reserves can go back to the device.
      CUPLUG_CALL(cuMemPoolTrimTo, pool, 0);
      r = alloc(&p, bytes, pool, stream);
      if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        CUPLUG_CALL(cuStreamSynchronize, stream); // let pending frees on this stream complete
        CUPLUG_CALL(cuMemPoolTrimTo, pool, 0);
        r = alloc(&p, bytes, pool, stream);
      }
      if (r == CUDA_ERROR_OUT_OF_MEMORY)
        throw out_of_memory("cuMemAllocFromPoolAsync", bytes, stats().bytes_in_use, do_bytes_held(),
                            0);
    }
    check(r, "cuMemAllocFromPoolAsync");
    return p;
  }

  void do_deallocate(device_ptr ptr, std::size_t, CUstream stream) override {
    CUPLUG_CALL(cuMemFreeAsync, ptr, stream);
  }

  memory_kind do_kind() const override { return memory_kind::device; }
  bool do_can_free_held() const override { return true; }
  std::size_t do_free_held() override { return do_trim(0); }
  std::size_t do_trim(std::size_t keep_bytes) override {
    // A pool only releases memory whose stream-ordered frees have completed.
    CUPLUG_CALL(cuCtxSynchronize, nullptr);
    const std::size_t before = do_bytes_held();
    for (CUmemoryPool pool : snapshot())
      CUPLUG_CALL(cuMemPoolTrimTo, pool, keep_bytes);
    const std::size_t after = do_bytes_held();
    return before > after ? before - after : 0;
  }

  CUmemoryPool pool_for(CUdevice device) {
    // The common case, one device, costs one atomic load.
    if (const entry *last = last_.load(std::memory_order_acquire);
        last != nullptr && last->device == device)
      return last->pool;
    std::lock_guard<std::mutex> lock(mutex_);
    entry &e = pools_[device]; // map nodes stay put, so last_ may point at one
    if (e.pool == nullptr) {
      CUmemoryPool pool = nullptr;
      if (own_pool_) {
        CUmemPoolProps props{};
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = device;
        CUPLUG_CALL(cuMemPoolCreate, &pool, &props);
      } else {
        CUPLUG_CALL(cuDeviceGetDefaultMemPool, &pool, device);
      }
      cuuint64_t threshold = threshold_;
      CUPLUG_CALL(cuMemPoolSetAttribute, pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
      e.device = device;
      e.pool = pool;
    }
    last_.store(&e, std::memory_order_release);
    return e.pool;
  }

  std::vector<CUmemoryPool> snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<CUmemoryPool> out;
    for (const auto &[device, e] : pools_)
      out.push_back(e.pool);
    return out;
  }

  struct entry {
    CUdevice device = -1;
    CUmemoryPool pool = nullptr;
  };

  const std::uint64_t threshold_;
  const bool own_pool_;
  mutable std::mutex mutex_;
  std::map<CUdevice, entry> pools_;
  std::atomic<const entry *> last_{nullptr};
};

} // namespace
} // namespace cuplug::plugins

CUPLUG_PLUGIN(allocator, cuplug::plugins::async_allocator, "async",
              "stream-ordered cuMemAllocFromPoolAsync on a CUDA memory pool (option "
              "release_threshold)",
              CUPLUG_PLUGIN_VERSION)
