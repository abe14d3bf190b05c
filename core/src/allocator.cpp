// The allocator's public door: argument checks, statistics, foreign-exception translation.
#include <cuplug/allocation_observer.hpp>
#include <cuplug/allocator.hpp>
#include <cuplug/log.hpp>

#include "foreign_exceptions.hpp"

#include <atomic>
#include <cstdio>

namespace cuplug {

namespace {

std::atomic<allocation_observer *> observer{nullptr};

// How deep this thread is in allocator doors while an observer is installed: only the outermost
// call is reported (a pool's upstream calls happen inside the pool's door).
thread_local int door_depth = 0;

class door_nesting {
public:
  door_nesting() : observer_(observer.load(std::memory_order_acquire)) {
    if (observer_ != nullptr)
      ++door_depth;
  }
  ~door_nesting() {
    if (observer_ != nullptr)
      --door_depth;
  }
  door_nesting(const door_nesting &) = delete;
  door_nesting &operator=(const door_nesting &) = delete;
  // The observer to tell, when this is the outermost door on the thread; null otherwise.
  allocation_observer *outermost() const { return door_depth == 1 ? observer_ : nullptr; }

private:
  allocation_observer *observer_;
};

} // namespace

void set_allocation_observer(allocation_observer *o) noexcept {
  observer.store(o, std::memory_order_release);
}

allocation_observer *current_allocation_observer() noexcept {
  return observer.load(std::memory_order_acquire);
}

const char *to_string(memory_kind kind) noexcept {
  switch (kind) {
  case memory_kind::device:
    return "device";
  case memory_kind::managed:
    return "managed";
  case memory_kind::pinned_host:
    return "pinned_host";
  case memory_kind::host:
    return "host";
  }
  return "unknown";
}

device_ptr allocator::allocate(std::size_t bytes, CUstream stream) {
  if (bytes == 0)
    return 0;
  const door_nesting nesting;
  device_ptr p = 0;
  try {
    p = do_allocate(bytes, stream);
  } catch (const std::bad_alloc &) {
    ++failures_;
    throw out_of_memory("allocator::allocate", bytes, in_use_.load(), do_bytes_held(), 0,
                        "allocator '" + backend_name() + "'");
  } catch (...) {
    ++failures_;
    detail::rethrow_as_core_error(*this, "allocator", "allocate");
  }
  if (p == 0) {
    ++failures_;
    throw plugin_error("allocator '" + backend_name() + "' returned a null pointer for " +
                       std::to_string(bytes) + " bytes instead of raising out of memory");
  }
  ++allocations_;
  raise_peak(in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes);
  if (allocation_observer *o = nesting.outermost())
    o->allocated(*this, p, bytes, stream);
  return p;
}

void allocator::raise_peak(std::size_t now) noexcept {
  std::size_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

std::size_t allocator::reset_peak() noexcept {
  const std::size_t old = peak_.exchange(in_use_.load());
  // An allocation between the two loads above may have compared against the old, higher peak
  // and left it alone: raise the new peak to what is in use now, so peak >= in use still holds.
  raise_peak(in_use_.load());
  return old;
}

namespace {
std::string free_failure(const std::string &backend, std::size_t bytes, device_ptr ptr) {
  char address[32];
  std::snprintf(address, sizeof address, "0x%zx", static_cast<std::size_t>(ptr));
  return "cuplug WARNING: allocator '" + backend + "' failed to free " + std::to_string(bytes) +
         " bytes at " + address;
}
} // namespace

void allocator::deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) noexcept {
  if (ptr == 0)
    return;
  const door_nesting nesting;
  if (allocation_observer *o = nesting.outermost())
    o->deallocated(*this, ptr, bytes);
  ++deallocations_;
  in_use_.fetch_sub(bytes, std::memory_order_relaxed);
  try {
    do_deallocate(ptr, bytes, stream);
  } catch (const std::exception &e) {
    ++failures_;
    log_warning(log_component::memory, free_failure(backend_name(), bytes, ptr) + ": " + e.what());
  } catch (...) {
    ++failures_;
    log_warning(log_component::memory, free_failure(backend_name(), bytes, ptr));
  }
}

allocator_stats allocator::stats() const {
  allocator_stats s;
  s.bytes_in_use = in_use_.load();
  s.peak_bytes = peak_.load();
  s.bytes_held = do_bytes_held();
  s.allocations = allocations_.load();
  s.deallocations = deallocations_.load();
  s.failures = failures_.load();
  return s;
}

std::size_t allocator::free_held() {
  const door_nesting nesting; // what a pool gives back to its upstream is no user's block
  try {
    return do_free_held();
  } catch (...) {
    detail::rethrow_as_core_error(*this, "allocator", "free_held");
  }
}

std::size_t allocator::trim(std::size_t keep_bytes) {
  const door_nesting nesting;
  try {
    return do_trim(keep_bytes);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "allocator", "trim");
  }
}

std::optional<pool_stats> allocator::pool_statistics() const {
  try {
    return do_pool_statistics();
  } catch (...) {
    detail::rethrow_as_core_error(*this, "allocator", "pool_statistics");
  }
}

void allocator::stop_holding() {
  const door_nesting nesting;
  try {
    do_stop_holding();
  } catch (...) {
    detail::rethrow_as_core_error(*this, "allocator", "stop_holding");
  }
}

void allocator::set_trace(bool on) {
  try {
    do_set_trace(on);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "allocator", "set_trace");
  }
}

void allocator::set_out_of_memory_hook(out_of_memory_hook hook) {
  try {
    do_set_out_of_memory_hook(std::move(hook));
  } catch (...) {
    detail::rethrow_as_core_error(*this, "allocator", "set_out_of_memory_hook");
  }
}

std::size_t allocator::do_free_held() {
  throw not_supported("allocator '" + backend_name() + "' holds no memory to free");
}

std::size_t allocator::do_trim(std::size_t) {
  throw not_supported("allocator '" + backend_name() + "' cannot trim");
}

void allocator::do_stop_holding() {
  throw not_supported("allocator '" + backend_name() + "' is not a pool: it holds nothing to stop");
}

void allocator::do_set_trace(bool) {
  throw not_supported("allocator '" + backend_name() + "' is not a pool: it has no trace");
}

void allocator::do_set_out_of_memory_hook(out_of_memory_hook) {
  throw not_supported("allocator '" + backend_name() +
                      "' is not a pool: it runs no out-of-memory hook");
}

} // namespace cuplug
