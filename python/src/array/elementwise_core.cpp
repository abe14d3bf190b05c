// elementwise_core: plan, find (or generate) the kernel for the layout, pack, launch.
#include "array/elementwise_core.hpp"

#include "array/same_device.hpp"
#include "array/type_codes.hpp"
#include "hooks.hpp"
#include "support/convert.hpp"

#include <cuplug/errors.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <type_traits>
#include <unordered_set>

namespace cuplug::python::array {

static_assert(std::is_same_v<Py_ssize_t, std::ptrdiff_t>, "Py_ssize_t is ptrdiff_t here");

namespace {

constexpr unsigned block_threads = 256; // cuplug._codegen.elementwise.BLOCK
constexpr std::size_t max_param_bytes = 4096;

// std::to_string, not a stream: streams take the process's global C++ locale, which a library
// may have set to one that groups or drops digits.
std::string shape_text(const std::vector<long long> &shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k)
    s += std::to_string(shape[k]) + (shape.size() == 1 ? "," : k + 1 < shape.size() ? ", " : "");
  return s + ")";
}

std::string shape_text(const array_object *a) {
  return shape_text(std::vector<long long>(a->shape, a->shape + a->ndim));
}

std::string dtype_text(const array_object *a) {
  return py::str(py::handle(a->dtype)).cast<std::string>();
}

struct packer {
  alignas(16) unsigned char buf[max_param_bytes];
  std::size_t pos = 0;
  void align(std::size_t a) { pos = (pos + a - 1) / a * a; }
  void put(const void *data, std::size_t size, std::size_t alignment) {
    align(alignment);
    if (pos + size > max_param_bytes)
      throw py::value_error("elementwise kernel: the parameters exceed " +
                            std::to_string(max_param_bytes) + " bytes");
    std::memcpy(buf + pos, data, size);
    pos += size;
  }
  template <class T> void put(T value) { put(&value, sizeof value, sizeof value); }
};

} // namespace

std::size_t elementwise_core::key_hash::operator()(const key &k) const noexcept {
  std::size_t h = std::hash<std::string>()(k.classes);
  h ^= reinterpret_cast<std::uintptr_t>(k.ctx) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= static_cast<std::size_t>(k.ndim * 131 + k.vec * 7 + (k.index64 ? 1 : 0)) + (h << 6);
  return h;
}

namespace {
// The live cores, for drop_context (under the GIL, as every core use).
std::unordered_set<elementwise_core *> &live_cores() {
  static auto *cores = new std::unordered_set<elementwise_core *>(); // leaked: exit order
  return *cores;
}
} // namespace

elementwise_core::elementwise_core(std::vector<arg_spec> args, plan_options options,
                                   py::object generator, std::string name)
    : args_(std::move(args)), options_(options), generator_(std::move(generator)),
      name_(std::move(name)) {
  for (const arg_spec &a : args_)
    if (a.raw)
      options_.vectorizable = false;
  live_cores().insert(this);
}

elementwise_core::~elementwise_core() { live_cores().erase(this); }

void elementwise_core::clear_all() noexcept {
  for (elementwise_core *core : live_cores())
    core->clear();
}

void elementwise_core::drop_context(CUcontext handle, unsigned long long) noexcept {
  for (elementwise_core *core : live_cores()) {
    for (auto it = core->cache_.begin(); it != core->cache_.end();)
      it = it->first.ctx == handle ? core->cache_.erase(it) : std::next(it);
    if (core->last_key_.ctx == handle)
      core->last_ = nullptr;
  }
}

bool elementwise_core::plan_contiguous(const operand *ops, launch_plan &p) const {
  // Every vector C-contiguous with one shape (the common case): one flat dimension, no
  // broadcasting, no planner.
  const std::size_t nargs = args_.size();
  const array_object *first = nullptr;
  for (std::size_t k = 0; k < nargs; ++k) {
    if (!args_[k].vector)
      continue;
    const array_object *a = ops[k].array;
    if (!args_[k].raw) {
      if (!a->c_contiguous)
        return false;
      if (first == nullptr)
        first = a;
      else if (a->ndim != first->ndim || !std::equal(a->shape, a->shape + a->ndim, first->shape))
        return false;
    }
  }
  if (first == nullptr)
    return false;
  p.n = first->size;
  p.iter_shape.assign(first->shape, first->shape + first->ndim);
  p.classes.assign(nargs, 's');
  p.ptrs.assign(nargs, 0);
  p.ndim = 1;
  p.shape.assign(1, p.n);
  for (std::size_t k = 0; k < nargs; ++k) {
    if (!args_[k].vector)
      continue;
    p.classes[k] = args_[k].raw ? 'p' : 'c';
    p.ptrs[k] = ops[k].array->size == 0 ? 0 : ops[k].array->ptr;
  }
  int vec = 1;
  if (options_.vectorizable && !options_.keep_order && p.n > 1) {
    long long widest = 0;
    for (std::size_t k = 0; k < nargs; ++k)
      if (p.classes[k] == 'c')
        widest = std::max(widest, static_cast<long long>(ops[k].array->itemsize));
    if (widest > 0 && widest <= 16 && (widest & (widest - 1)) == 0)
      vec = static_cast<int>(16 / widest);
    for (; vec > 1; vec /= 2) {
      bool ok = true;
      for (std::size_t k = 0; ok && k < nargs; ++k) {
        if (p.classes[k] != 'c')
          continue;
        const long long item = ops[k].array->itemsize;
        ok = (item & (item - 1)) == 0 && p.ptrs[k] % (vec * item) == 0;
      }
      if (ok)
        break;
    }
  }
  p.vec = vec;
  p.index64 = p.n > 0x7fffffffLL;
  return true;
}

launch_plan elementwise_core::plan(const operand *ops,
                                   const std::vector<long long> *iter_shape) const {
  const std::size_t nargs = args_.size();
  if (iter_shape == nullptr) {
    launch_plan fast;
    if (plan_contiguous(ops, fast))
      return fast;
  }
  std::vector<plan_operand> pops(nargs);
  for (std::size_t k = 0; k < nargs; ++k) {
    const arg_spec &spec = args_[k];
    if (!spec.vector || spec.raw)
      continue;
    const array_object *a = ops[k].array;
    plan_operand &p = pops[k];
    p.vector = true;
    p.written = spec.written;
    p.ndim = a->ndim;
    p.shape = a->shape;
    p.strides = a->strides;
    p.itemsize = a->itemsize;
    p.ptr = a->size == 0 ? 0 : a->ptr;
  }
  auto vectors_text = [&] {
    std::string s;
    for (std::size_t k = 0; k < nargs; ++k) {
      if (!args_[k].vector || args_[k].raw)
        continue;
      s += (s.empty() ? "" : ", ") + shape_text(ops[k].array) + " " + dtype_text(ops[k].array);
    }
    return s;
  };
  try {
    launch_plan p = plan_layout(pops, options_, iter_shape);
    for (std::size_t k = 0; k < nargs; ++k) {
      if (args_[k].raw) {
        p.classes[k] = 'p';
        p.ptrs[k] = ops[k].array->size == 0 ? 0 : ops[k].array->ptr;
      }
    }
    return p;
  } catch (const broadcast_error &) {
    if (iter_shape != nullptr)
      throw py::value_error(name_ + ": operands could not be broadcast to shape " +
                            shape_text(*iter_shape) + ": " + vectors_text());
    throw py::value_error(name_ + ": operands could not be broadcast together with shapes " +
                          vectors_text());
  } catch (const output_shape_error &e) {
    std::vector<long long> broadcast;
    for (std::size_t k = 0; k < nargs; ++k) {
      if (!args_[k].vector || args_[k].written || args_[k].raw)
        continue;
      const array_object *a = ops[k].array;
      if (a->ndim > static_cast<int>(broadcast.size()))
        broadcast.insert(broadcast.begin(), a->ndim - broadcast.size(), 1);
      for (int d = 0; d < a->ndim; ++d) {
        long long &s = broadcast[broadcast.size() - a->ndim + d];
        if (s == 1)
          s = a->shape[d];
      }
    }
    if (iter_shape != nullptr)
      broadcast = *iter_shape;
    const array_object *out = ops[e.operand].array;
    throw py::value_error(name_ + ": output '" + args_[e.operand].name + "' of shape " +
                          shape_text(out) + " " + dtype_text(out) +
                          " does not match the broadcast shape " + shape_text(broadcast) +
                          " of the operands (" + vectors_text() +
                          "), or has a zero stride (it would write one element twice)");
  } catch (const stride_error &e) {
    const array_object *a = ops[e.operand].array;
    throw py::value_error(name_ + ": argument '" + args_[e.operand].name +
                          "' has strides that are not whole elements of " + dtype_text(a));
  } catch (const layout_error &e) {
    throw py::value_error(name_ + ": argument '" + args_[e.operand].name +
                          "' must be C-contiguous with the operation's shape: the operation "
                          "indexes it other than as " +
                          args_[e.operand].name + "[i]");
  }
}

function &elementwise_core::kernel_for(const key &k) {
  // A kernel whose module died with its context (detached) is stale even when a new context got
  // that context's handle, as the driver often gives it: the key matches, the function is gone.
  if (last_ != nullptr && last_key_ == k && last_->get_module()->alive())
    return *last_;
  auto it = cache_.find(k);
  if (it != cache_.end() && !it->second->get_module()->alive()) {
    cache_.erase(it);
    it = cache_.end();
    last_ = nullptr;
  }
  if (it == cache_.end()) {
    py::object f = generator_(k.classes, k.ndim, k.vec, k.index64);
    function_ptr fn = f.cast<function_ptr>();
    it = cache_.emplace(k, std::move(fn)).first;
  }
  last_key_ = k;
  last_ = it->second.get();
  return *last_;
}

void elementwise_core::launch(const operand *ops, CUstream stream,
                              const std::vector<long long> *iter_shape) {
  const std::size_t nargs = args_.size();
  context_ptr ctx = context::current_or_throw(name_.c_str());
  const CUcontext here = ctx->handle();
  for (std::size_t k = 0; k < nargs; ++k) {
    if (!args_[k].vector)
      continue;
    const array_object *a = ops[k].array;
    if (a->size != 0)
      data_ptr(a); // raises for freed memory or a destroyed context (whose handle may be reused)
    if (a->ctx != nullptr && a->ctx != here)
      throw_mixed_devices(name_, args_[k].name, a->ctx, here);
  }
  launch_plan p = plan(ops, iter_shape);
  if (p.n == 0)
    return;

  key k{here, p.classes, p.ndim, p.vec, p.index64};
  function &f = kernel_for(k);

  packer pk;
  for (std::size_t a = 0; a < nargs; ++a) {
    const arg_spec &spec = args_[a];
    if (spec.vector) {
      pk.put(static_cast<unsigned long long>(p.ptrs[a]));
    } else if (spec.itemsize > 16) {
      pk.put(ops[a].big.data(), ops[a].big.size(), 8);
    } else {
      const std::size_t align =
          spec.code >= 0 ? align_of(spec.code)
                         : static_cast<std::size_t>(spec.dtype.attr("alignment").cast<long long>());
      pk.put(ops[a].scalar, static_cast<std::size_t>(spec.itemsize), align);
    }
  }
  if (!p.strides.empty()) {
    const int nd = p.ndim;
    if (p.index64) {
      pk.align(8);
      for (int d = 0; d < nd; ++d)
        pk.put(static_cast<unsigned long long>(p.shape[d]));
      for (int d = 0; d < nd; ++d)
        pk.put(0u);
      for (int d = 0; d < nd; ++d)
        pk.put(0u);
      for (const auto &s : p.strides)
        for (int d = 0; d < nd; ++d)
          pk.put(static_cast<long long>(s[d]));
      pk.align(8);
    } else {
      pk.align(4);
      for (int d = 0; d < nd; ++d)
        pk.put(static_cast<unsigned>(p.shape[d]));
      unsigned mul[64], shr[64];
      for (int d = 0; d < nd; ++d)
        fast_divmod_constants(static_cast<unsigned>(p.shape[d]), mul[d], shr[d]);
      for (int d = 0; d < nd; ++d)
        pk.put(mul[d]);
      for (int d = 0; d < nd; ++d)
        pk.put(shr[d]);
      for (const auto &s : p.strides)
        for (int d = 0; d < nd; ++d)
          pk.put(static_cast<int>(s[d]));
    }
  }
  if (p.index64)
    pk.put(static_cast<unsigned long long>(p.n));
  else
    pk.put(static_cast<unsigned>(p.n));

  long long work = p.n / p.vec;
  if (p.strides.empty() && p.vec > 1)
    work = std::max(work, p.n % p.vec); // the tail loop's threads
  launch_config config;
  config.block = dim3{block_threads, 1, 1};
  config.grid = dim3{grid_for(std::max(work, 1LL), ctx->device()), 1, 1};
  config.stream = stream;
  f.launch(config, pk.buf, pk.pos);
}

namespace {
// One work item per thread measured fastest on H100/H200 for memory-bound operations (the
// grid-stride loop then only covers grids beyond 2**31 - 1 blocks).
constexpr long long default_blocks_per_sm = 1LL << 24;
long long blocks_per_sm = default_blocks_per_sm; // or the blocks_per_sm hook (CUPLUG_ARRAY_TUNE)
std::unordered_map<CUdevice, long long> &block_limits() {
  static auto *limits = new std::unordered_map<CUdevice, long long>();
  return *limits;
}
} // namespace

void refresh_blocks_per_sm() {
  py::handle value = hooks::get(hooks::hook::blocks_per_sm); // an int >= 1, checked there
  blocks_per_sm = value ? value.cast<long long>() : default_blocks_per_sm;
  block_limits().clear();
}

long long get_blocks_per_sm() noexcept { return blocks_per_sm; }

unsigned grid_for(long long work, CUdevice device) {
  auto &limits = block_limits();
  auto it = limits.find(device);
  if (it == limits.end()) {
    int sms = 0;
    CUresult r = detail::entry(driver().cuDeviceGetAttribute, "cuDeviceGetAttribute")(
        &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    if (r != CUDA_SUCCESS || sms <= 0)
      sms = 1;
    // Enough resident blocks to fill every SM several times over; threads loop beyond that.
    it = limits.emplace(device, static_cast<long long>(sms) * blocks_per_sm).first;
  }
  const long long blocks = (work + block_threads - 1) / block_threads;
  return static_cast<unsigned>(std::min({blocks, it->second, 0x7fffffffLL}));
}

void fill_operand(const arg_spec &spec, py::handle value, operand &out) {
  if (spec.vector) {
    if (!is_array(value.ptr()))
      throw py::type_error("argument '" + spec.name + "' must be a GPUArray, got " +
                           type_name(value));
    array_object *a = as_array(value.ptr());
    if (a->dtype == nullptr)
      throw py::type_error("argument '" + spec.name + "': GPUArray was not initialised");
    if ((spec.code >= 0 && a->code != spec.code) || (spec.code < 0 && a->itemsize != spec.itemsize))
      throw py::type_error("argument '" + spec.name + "' must be a " +
                           py::str(spec.dtype).cast<std::string>() + " array, got " +
                           dtype_text(a));
    out.array = a;
    return;
  }
  if (spec.code >= 0) {
    scalar_to_bytes(value, spec.code, out.scalar);
    return;
  }
  // A struct or vector-type scalar: its bytes as numpy makes them.
  py::bytes raw = py::module_::import("numpy").attr("asarray")(value, spec.dtype).attr("tobytes")();
  std::string bytes = raw;
  if (static_cast<long long>(bytes.size()) != spec.itemsize)
    throw py::type_error("argument '" + spec.name + "': expected one " +
                         py::str(spec.dtype).cast<std::string>() + " value");
  if (bytes.size() <= sizeof out.scalar)
    std::memcpy(out.scalar, bytes.data(), bytes.size());
  else
    out.big = std::move(bytes);
}

} // namespace cuplug::python::array
