// PyCUDA's memory pools as C++ classes (DeviceMemoryPool, PageLockedMemoryPool,
// PageLockedAllocator and the pooled allocations; bound in init_pools.cpp). Each pool is an
// allocator of a pool backend ("pool" unless named), created through the registry over the
// pool's upstream, and used only through the allocator interface: another pool plugin changes
// what these classes do.
#pragma once

#include "driver/context.hpp"
#include "memory/memory.hpp"

#include <cuplug/allocator.hpp>
#include <cuplug/pool/page_locked_memory.hpp>

#include <pybind11/numpy.h>

#include <memory>
#include <optional>

namespace cuplug::python {

using pool_ptr = plugin_ptr<allocator>;

// `upstream` as given to a pool: None (the default allocator backend), a backend name, or an
// Allocator.
plugin_ptr<allocator> upstream_from(py::handle upstream);

// A pool of backend `backend` (None: default_pool_backend) over `upstream`, which it reaches
// with `ctx` current; `who` names the Python class in messages and as the allocator's name.
// Throws config_error when the backend keeps no pool statistics (it is no pool).
pool_ptr make_pool(context_ptr ctx, plugin_ptr<allocator> upstream, py::handle backend,
                   const char *who);

// What the pools have in common: counters, free_held, stop_holding, trace (PyCUDA's
// expose_memory_pool). Calls run with the pool's context current, if it has one.
class python_pool {
public:
  python_pool(context_ptr ctx, pool_ptr pool) : ctx_(std::move(ctx)), pool_(std::move(pool)) {}
  // PyCUDA frees what is held; nothing can take blocks from a pool nobody can reach, so
  // blocks of allocations still alive go straight back to the upstream when they are freed.
  ~python_pool() {
    if (interpreter_finalizing())
      return;
    try {
      stop_holding();
    } catch (...) {
    }
  }
  python_pool(const python_pool &) = delete;
  python_pool &operator=(const python_pool &) = delete;

  // make_pool checked that the backend keeps them.
  pool_stats counters() const { return pool_->pool_statistics().value_or(pool_stats{}); }
  std::size_t free_held() {
    activation a(ctx_);
    return pool_->free_held();
  }
  void stop_holding() {
    activation a(ctx_);
    pool_->stop_holding();
  }
  void set_trace(bool on) { pool_->set_trace(on); }
  const pool_ptr &pool() const { return pool_; }
  const context_ptr &ctx() const { return ctx_; }

protected:
  // scoped_activation when there is a context to activate.
  struct activation {
    explicit activation(const context_ptr &ctx) {
      if (ctx)
        scoped.emplace(ctx);
    }
    std::optional<scoped_activation> scoped;
  };

  context_ptr ctx_;
  pool_ptr pool_;
};

// PyCUDA's PooledDeviceAllocation: a DeviceAllocation from a pool, usable wherever one is.
class pooled_device_allocation final : public device_allocation {
public:
  using device_allocation::device_allocation;
};

class device_memory_pool final : public python_pool {
public:
  device_memory_pool(py::handle upstream, py::handle backend)
      : device_memory_pool(context::current_or_throw(), upstream, backend) {}

  // A block of `size` bytes, ordered on `stream_obj` (None: the legacy stream), whose Python
  // object the allocation keeps alive.
  std::shared_ptr<pooled_device_allocation> allocate(py::handle size, py::handle stream_obj);

private:
  device_memory_pool(context_ptr ctx, py::handle upstream, py::handle backend)
      : python_pool(ctx, make_pool(ctx, upstream_from(upstream), backend, "DeviceMemoryPool")) {}
};

// PyCUDA's PageLockedAllocator(flags): cuMemHostAlloc with those flags, from the pool kit (no
// plugin's options to spell).
class page_locked_allocator {
public:
  explicit page_locked_allocator(unsigned flags)
      : ctx_(context::current()), allocator_(std::make_shared<pool::page_locked_memory>(flags)) {
    allocator_->set_backend_name("PageLockedAllocator");
  }
  unsigned flags() const noexcept { return allocator_->flags(); }
  plugin_ptr<allocator> get() const { return allocator_; }
  const context_ptr &ctx() const noexcept { return ctx_; }

private:
  context_ptr ctx_; // the context current when it was made, if any: pinned memory belongs to one
  std::shared_ptr<pool::page_locked_memory> allocator_;
};

// PyCUDA's PooledHostAllocation: the base of a pooled page-locked ndarray.
class pooled_host_allocation {
public:
  pooled_host_allocation(pool_ptr pool, device_ptr ptr, std::size_t bytes)
      : pool_(std::move(pool)), ptr_(ptr), bytes_(bytes) {}
  ~pooled_host_allocation() {
    if (!freed_ && !interpreter_finalizing())
      pool_->deallocate(ptr_, bytes_, nullptr);
  }
  pooled_host_allocation(const pooled_host_allocation &) = delete;
  pooled_host_allocation &operator=(const pooled_host_allocation &) = delete;

  void free() {
    if (freed_)
      throw cuda_error("pooled_host_allocation::free", CUDA_ERROR_INVALID_HANDLE);
    pool_->deallocate(ptr_, bytes_, nullptr);
    freed_ = true;
  }
  std::size_t size() const noexcept { return bytes_; }
  device_ptr ptr() const noexcept { return ptr_; }

private:
  pool_ptr pool_;
  device_ptr ptr_;
  std::size_t bytes_;
  bool freed_ = false;
};

class page_locked_memory_pool final : public python_pool {
public:
  page_locked_memory_pool(const page_locked_allocator &alloc, py::handle backend)
      : python_pool(alloc.ctx(),
                    make_pool(alloc.ctx(), alloc.get(), backend, "PageLockedMemoryPool")) {}

  // An uninitialised ndarray of `shape`, `dtype` and `order` ('C' or 'F') in a pooled block; its
  // base is the PooledHostAllocation that gives the block back.
  py::array allocate(py::handle shape, py::handle dtype, py::handle order);
};

} // namespace cuplug::python
