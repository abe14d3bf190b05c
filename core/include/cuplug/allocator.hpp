// The allocator interface: stream-ordered allocate/deallocate with statistics kept by the core.
#pragma once

#include <cuplug/plugin_abi.hpp>

#include <cuplug/plugin.hpp>

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cuplug {

enum class memory_kind { device, managed, pinned_host, host };
const char *to_string(memory_kind kind) noexcept;

struct allocator_stats {
  std::size_t bytes_in_use = 0;  // requested bytes of live allocations
  std::size_t peak_bytes = 0;    // highest bytes_in_use seen
  std::size_t bytes_held = 0;    // cached by the allocator, not in use (pools); 0 otherwise
  std::size_t allocations = 0;   // successful allocate() calls with bytes > 0
  std::size_t deallocations = 0; // deallocate() calls with ptr != 0
  std::size_t failures = 0;      // allocate() calls that threw
};

// Stream-ordered allocator. allocate(bytes, stream) returns memory usable by work on `stream`
// (0 = legacy default stream) in the current context; deallocate(ptr, bytes, stream) takes the
// same bytes and returns it once that stream's earlier work is done. Zero bytes give 0, and
// deallocating 0 does nothing. allocate throws out_of_memory (or cuda_error); a foreign
// exception from a plugin arrives as plugin_error. deallocate never throws: a failed release is
// reported once on stderr and counted. Thread-safe if the plugin is (all built-ins are).
class CUPLUG_API allocator : public plugin_object {
public:
  std::uintptr_t allocate(std::size_t bytes, CUstream stream = nullptr);
  void deallocate(std::uintptr_t ptr, std::size_t bytes, CUstream stream = nullptr) noexcept;

  memory_kind kind() const { return do_kind(); }
  allocator_stats stats() const;

  // Optional: give cached memory back to the upstream / driver. Returns bytes released.
  bool can_free_held() const { return do_can_free_held(); }
  std::size_t free_held();
  // Optional: release down to `keep_bytes` held.
  std::size_t trim(std::size_t keep_bytes);

protected:
  // Pools report what they cache through this.
  virtual std::size_t do_bytes_held() const { return 0; }

private:
  virtual std::uintptr_t do_allocate(std::size_t bytes, CUstream stream) = 0;
  virtual void do_deallocate(std::uintptr_t ptr, std::size_t bytes, CUstream stream) = 0;
  virtual memory_kind do_kind() const = 0;
  virtual bool do_can_free_held() const { return false; }
  virtual std::size_t do_free_held();
  virtual std::size_t do_trim(std::size_t keep_bytes);

  std::atomic<std::size_t> in_use_{0}, peak_{0}, allocations_{0}, deallocations_{0},
      failures_{0};
};

} // namespace cuplug
