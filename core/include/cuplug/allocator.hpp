// The allocator interface: stream-ordered allocate/deallocate with statistics kept by the core.
#pragma once

#include <cuplug/plugin.hpp>
#include <cuplug/plugin_abi.hpp>

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>

namespace cuplug {

enum class memory_kind { device, managed, pinned_host, host };
const char *to_string(memory_kind kind) noexcept;

// Every block an allocator hands out starts at a multiple of this many bytes, as cuMemAlloc's do
// (the allocator contract suites check it for every backend), so kernels may use vector loads.
inline constexpr std::size_t allocation_alignment = 256;

struct allocator_stats {
  std::size_t bytes_in_use = 0;  // requested bytes of live allocations
  std::size_t peak_bytes = 0;    // highest bytes_in_use seen
  std::size_t bytes_held = 0;    // cached by the allocator, not in use (pools); 0 otherwise
  std::size_t allocations = 0;   // successful allocate() calls with bytes > 0
  std::size_t deallocations = 0; // deallocate() calls with ptr != 0
  std::size_t failures = 0;      // allocate() calls that threw
};

// PyCUDA's pool counters (spec §13.5), kept by allocators that cache blocks (pools).
struct pool_stats {
  std::size_t held_blocks = 0;   // freed by the user, cached for reuse
  std::size_t active_blocks = 0; // in use by the user
  std::size_t held_bytes = 0;    // block sizes of the held blocks
  std::size_t managed_bytes = 0; // block sizes of held + active blocks (what the upstream gave)
  std::size_t active_bytes = 0;  // requested sizes of the active blocks
};

// The pool backend cuplug's own pools (DeviceMemoryPool, PageLockedMemoryPool) are made of when
// none is named: any allocator that takes an upstream (registry::create_adaptor) and reports
// pool_statistics() can stand in for it.
inline constexpr const char *default_pool_backend = "pool";

// Stream-ordered allocator. allocate(bytes, stream) returns memory usable by work on `stream`
// (0 = legacy default stream) in the current context, aligned to allocation_alignment;
// deallocate(ptr, bytes, stream) takes the same bytes and returns it once that stream's earlier
// work is done. Zero bytes give 0, and deallocating 0 does nothing. allocate throws
// out_of_memory (or cuda_error); a foreign exception from a plugin arrives as plugin_error.
// deallocate never throws: a failed release is reported once on stderr and counted.
// Thread-safe if the plugin is (all built-ins are).
class CUPLUG_API allocator : public plugin_object {
public:
  [[nodiscard]] device_ptr allocate(std::size_t bytes, CUstream stream = nullptr);
  void deallocate(device_ptr ptr, std::size_t bytes, CUstream stream = nullptr) noexcept;

  [[nodiscard]] memory_kind kind() const { return do_kind(); }
  [[nodiscard]] allocator_stats stats() const;
  // Restarts peak_bytes from the bytes in use now (torch.cuda.reset_peak_memory_stats); the other
  // counters keep counting. Returns the peak it replaced.
  std::size_t reset_peak() noexcept;

  // Optional: give cached memory back to the upstream / driver. Returns bytes released.
  [[nodiscard]] bool can_free_held() const { return do_can_free_held(); }
  std::size_t free_held();
  // Optional: release down to `keep_bytes` held.
  std::size_t trim(std::size_t keep_bytes);

  // Optional, for pools (what PyCUDA's DeviceMemoryPool offers). An allocator that is not a pool
  // answers nullopt here and not_supported from the three calls below.
  [[nodiscard]] std::optional<pool_stats> pool_statistics() const;
  // Frees what is held; from then on freed blocks go straight back to the upstream.
  void stop_holding();
  // Trace lines ("[pool] ...", on stdout) while on; nested: on twice needs off twice.
  void set_trace(bool on);
  // Runs when an allocation meets out of memory, before the pool releases what it holds, with
  // no lock held; it may free blocks into the pool (Python's gc.collect()). Set it before the
  // allocator is shared between threads; an empty function removes it.
  using out_of_memory_hook = std::function<void()>;
  void set_out_of_memory_hook(out_of_memory_hook hook);

protected:
  // Pools report what they cache through this.
  virtual std::size_t do_bytes_held() const { return 0; }

private:
  virtual device_ptr do_allocate(std::size_t bytes, CUstream stream) = 0;
  virtual void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) = 0;
  virtual memory_kind do_kind() const = 0;
  virtual bool do_can_free_held() const { return false; }
  virtual std::size_t do_free_held();
  virtual std::size_t do_trim(std::size_t keep_bytes);
  virtual std::optional<pool_stats> do_pool_statistics() const { return std::nullopt; }
  virtual void do_stop_holding();
  virtual void do_set_trace(bool on);
  virtual void do_set_out_of_memory_hook(out_of_memory_hook hook);

  void raise_peak(std::size_t now) noexcept;

  std::atomic<std::size_t> in_use_{0}, peak_{0}, allocations_{0}, deallocations_{0}, failures_{0};
};

} // namespace cuplug
