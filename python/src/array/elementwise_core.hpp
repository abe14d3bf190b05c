// The elementwise engine: one operation over given argument dtypes, compiled per launch layout
// and context on first use (by a Python generator), cached, and launched without Python.
#pragma once

#include "array/array_object.hpp"
#include "array/layout_plan.hpp"
#include "launch/function.hpp"

#include <pybind11/pybind11.h>

#include <cuda.h>

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace cuplug::python::array {
namespace py = pybind11;

struct arg_spec {
  std::string name;
  bool vector = false;
  bool written = false;
  bool raw = false;       // a bare pointer the operation indexes itself (class 'p')
  int code = -1;          // type code; -1 for dtypes only vectors may have (vec types, structs)
  long long itemsize = 0; // of the declared dtype
  py::object dtype;
};

// An operand of one launch: the array for a vector argument, the value's bytes for a scalar.
struct operand {
  array_object *array = nullptr;
  alignas(16) unsigned char scalar[16] = {};
  std::string big; // scalars of more than 16 bytes (structs)
};

// Thread-safety: used under the GIL only.
class elementwise_core {
public:
  // `generator(classes, ndim, vec, index64)` returns a loaded Function (in the current context)
  // for that layout; it runs on the first launch of each layout in each context.
  elementwise_core(std::vector<arg_spec> args, plan_options options, py::object generator,
                   std::string name);
  ~elementwise_core();
  elementwise_core(const elementwise_core &) = delete;
  elementwise_core &operator=(const elementwise_core &) = delete;

  // Every live core forgets its kernels of the context `handle`, about to be destroyed (a
  // context destroy listener: the modules unload while it still lives).
  static void drop_context(CUcontext handle, unsigned long long serial) noexcept;
  // Every live core forgets its kernels (cuplug.tools.clear_context_caches()).
  static void clear_all() noexcept;

  // Launches over `ops` (one per argument) on `stream`. The iteration space is the broadcast of
  // the vectors (or `iter_shape`); nothing is launched when it is empty. Errors name the
  // arguments: shapes that do not broadcast (ValueError), operands of another context
  // (ValueError), a freed array (LogicError).
  void launch(const operand *ops, CUstream stream, const std::vector<long long> *iter_shape);

  const std::vector<arg_spec> &args() const noexcept { return args_; }
  const std::string &name() const noexcept { return name_; }
  std::size_t cached_layouts() const noexcept { return cache_.size(); }
  // Forgets the compiled kernels (and the contexts their modules keep alive). The map is
  // emptied before its kernels go: a module holding the last reference to its context destroys
  // it, and the context-destroy listener (drop_context) then walks this same map.
  void clear() noexcept {
    auto taken = std::move(cache_);
    cache_.clear();
    last_ = nullptr;
  }
  const plan_options &options() const noexcept { return options_; }

  // The plan launch() would use (for tests and the Python layer).
  launch_plan plan(const operand *ops, const std::vector<long long> *iter_shape) const;

private:
  struct key {
    CUcontext ctx;
    std::string classes;
    int ndim, vec;
    bool index64;
    bool operator==(const key &o) const noexcept {
      return ctx == o.ctx && ndim == o.ndim && vec == o.vec && index64 == o.index64 &&
             classes == o.classes;
    }
  };
  struct key_hash {
    std::size_t operator()(const key &k) const noexcept;
  };

  function &kernel_for(const key &k);
  // The plan when every vector is C-contiguous of one shape; false when not that case.
  bool plan_contiguous(const operand *ops, launch_plan &p) const;

  std::vector<arg_spec> args_;
  plan_options options_;
  py::object generator_;
  std::string name_;
  std::unordered_map<key, function_ptr, key_hash> cache_;
  // Last key and function looked up: a loop of one operation hits this without hashing.
  key last_key_{};
  function *last_ = nullptr;
};

// Python ints/floats/... and numpy scalars -> bytes of the argument's dtype; vectors -> arrays.
// Raises TypeError naming the argument for a vector argument that is not a GPUArray.
void fill_operand(const arg_spec &spec, py::handle value, operand &out);

// The launch geometry for `work` work items on the current device (grid-stride loops): at most
// blocks_per_sm blocks of 256 threads per multiprocessor (default: no cap below 2**31 - 1).
unsigned grid_for(long long work, CUdevice device);
// Re-reads the blocks_per_sm hook (hooks.hpp; its listener, with the GIL held).
void refresh_blocks_per_sm();
long long get_blocks_per_sm() noexcept;

void init_elementwise_core(py::module_ &m);

} // namespace cuplug::python::array
