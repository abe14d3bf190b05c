// The memory pools' C++ side: the context-bound upstream a pool draws from, making a pool of a
// pool backend, and the two allocate() that turn a block into a Python object.
#include "memory/pools.hpp"
#include "support/convert.hpp"
#include "support/host_buffer.hpp"
#include "support/nvtx_ranges.hpp"

#include <cuplug/config.hpp>
#include <cuplug/registry.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace cuplug::python {
namespace {

// A pool's upstream: the wrapped allocator, called with the pool's context current (PyCUDA's
// pools allocate and free under the context they were made in). At interpreter exit nothing is
// freed: the driver reclaims everything, and the context may be gone.
class context_bound_allocator final : public allocator {
public:
  context_bound_allocator(context_ptr ctx, plugin_ptr<allocator> inner)
      : ctx_(std::move(ctx)), inner_(std::move(inner)) {
    set_backend_name(inner_->backend_name());
  }

private:
  device_ptr do_allocate(std::size_t bytes, CUstream stream) override {
    if (!ctx_)
      return inner_->allocate(bytes, stream);
    scoped_activation activate(ctx_);
    return inner_->allocate(bytes, stream);
  }
  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) override {
    if (interpreter_finalizing())
      return;
    if (!ctx_) {
      inner_->deallocate(ptr, bytes, stream);
      return;
    }
    try {
      scoped_activation activate(ctx_);
      inner_->deallocate(ptr, bytes, stream);
    } catch (const cuda_error &) {
      // The context is dead: its memory went with it (PyCUDA's CATCH_CLEANUP_ON_DEAD_CONTEXT).
    }
  }
  memory_kind do_kind() const override { return inner_->kind(); }

  context_ptr ctx_;
  plugin_ptr<allocator> inner_;
};

// A fresh allocator of backend `name` with its configured options.
plugin_ptr<allocator> make_backend(const std::string &name) {
  return registry::instance().create<allocator>(
      plugin_kind::allocator, name,
      config::instance().plugin_options(plugin_kind::allocator, name));
}

} // namespace

plugin_ptr<allocator> upstream_from(py::handle upstream) {
  if (upstream.is_none())
    return make_backend(config::builtin_default(plugin_kind::allocator));
  if (py::isinstance<py::str>(upstream))
    return make_backend(upstream.cast<std::string>());
  try {
    return upstream.cast<plugin_ptr<allocator>>();
  } catch (const py::cast_error &) {
    throw py::type_error("upstream must be None, an allocator backend name or a "
                         "cuplug.memory.Allocator, got " +
                         type_name(upstream));
  }
}

pool_ptr make_pool(context_ptr ctx, plugin_ptr<allocator> upstream, py::handle backend,
                   const char *who) {
  const std::string name =
      backend.is_none() ? std::string(default_pool_backend) : backend.cast<std::string>();
  auto bound = std::make_shared<context_bound_allocator>(std::move(ctx), std::move(upstream));
  pool_ptr pool = registry::instance().create_adaptor(
      name, config::instance().plugin_options(plugin_kind::allocator, name), std::move(bound));
  if (!pool->pool_statistics())
    throw config_error(std::string(who) + ": allocator '" + name +
                       "' is not a pool: it keeps no pool statistics (held and active blocks); "
                       "name a pool backend such as '" +
                       default_pool_backend + "'");
  pool->set_backend_name(who);
  // PyCUDA's try_release_blocks(): unreferenced allocations may be waiting for the collector.
  pool->set_out_of_memory_hook([] {
    if (interpreter_finalizing())
      return;
    py::gil_scoped_acquire gil;
    try {
      py::module_::import("gc").attr("collect")();
    } catch (py::error_already_set &) {
    }
  });
  return pool;
}

std::shared_ptr<pooled_device_allocation> device_memory_pool::allocate(py::handle size,
                                                                       py::handle stream_obj) {
  const std::size_t bytes = to_size(size, "DeviceMemoryPool.allocate: size");
  const CUstream stream = stream_obj.is_none() ? nullptr : to_stream(stream_obj);
  device_ptr p;
  {
    nvtx_range range{"cuplug alloc", bytes_payload(bytes)};
    scoped_activation activate(ctx_);
    p = pool_->allocate(bytes, stream);
  }
  // The stream's Python object lives as long as memory ordered on it (as mem_alloc does).
  py::object owner;
  if (!stream_obj.is_none() && !PyLong_Check(stream_obj.ptr()))
    owner = py::reinterpret_borrow<py::object>(stream_obj);
  return std::make_shared<pooled_device_allocation>(ctx_, p, bytes, pool_, stream,
                                                    std::move(owner));
}

py::array page_locked_memory_pool::allocate(py::handle shape, py::handle dtype, py::handle order) {
  py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype));
  check_plain_dtype(dt, "PageLockedMemoryPool.allocate", "the array");
  std::vector<py::ssize_t> dims;
  if (PyIndex_Check(shape.ptr())) {
    dims.push_back(static_cast<py::ssize_t>(to_size(shape, "PageLockedMemoryPool: shape")));
  } else {
    for (py::handle d : py::iter(shape))
      dims.push_back(static_cast<py::ssize_t>(to_size(d, "PageLockedMemoryPool: shape")));
  }
  const std::string ord = order.is_none() ? "C" : py::str(order).cast<std::string>();
  if (ord != "C" && ord != "F" && ord != "c" && ord != "f")
    throw py::value_error("unrecognized order specifier '" + ord + "'");
  const bool fortran = ord == "F" || ord == "f";

  std::size_t count = 1;
  for (py::ssize_t d : dims)
    if (__builtin_mul_overflow(count, static_cast<std::size_t>(d), &count))
      throw py::value_error("PageLockedMemoryPool.allocate: the array is too large");
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, static_cast<std::size_t>(dt.itemsize()), &bytes))
    throw py::value_error("PageLockedMemoryPool.allocate: the array is too large");

  std::vector<py::ssize_t> strides(dims.size());
  py::ssize_t step = dt.itemsize();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::size_t axis = fortran ? i : dims.size() - 1 - i;
    strides[axis] = step;
    step *= std::max<py::ssize_t>(dims[axis], 1);
  }
  device_ptr p;
  {
    nvtx_range range{"cuplug alloc", bytes_payload(bytes)};
    activation a(ctx_);
    p = pool_->allocate(bytes, nullptr);
  }
  auto base = std::make_shared<pooled_host_allocation>(pool_, p, bytes);
  py::object base_obj = py::cast(base);
  if (p == 0) // zero bytes: numpy wants an address all the same
    return py::array(dt, dims, strides);
  return py::array(dt, dims, strides, reinterpret_cast<void *>(p), base_obj);
}

} // namespace cuplug::python
