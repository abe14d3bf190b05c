// Function: one kernel of a Module, its parameter layout and its prepared argument format.
#pragma once

#include "driver/activation.hpp"
#include "launch/arg_packer.hpp"
#include "launch/module.hpp"
#include "support/nvtx_ranges.hpp"

#include <optional>
#include <string>

namespace cuplug::python {

// Holds its module (so the module, and its context, outlive it) and launches through the
// module's launcher. Not thread-safe on its own; every member runs under the GIL.
class function {
public:
  function(module_ptr mod, CUfunction handle, std::string name)
      : module_(std::move(mod)), launcher_(&module_->get_launcher()), handle_(handle),
        name_(std::move(name)) {}

  CUfunction handle() const noexcept { return handle_; }
  // handle() for a driver call: LogicError naming `routine` when the module's context was
  // detached (which destroyed the module and this function with it).
  CUfunction live_handle(const char *routine) const {
    module_->check_alive(routine);
    return handle_;
  }
  const std::string &name() const noexcept { return name_; }
  const module_ptr &get_module() const noexcept { return module_; }
  cuplug::launcher &get_launcher() const noexcept { return *launcher_; }

  // The kernel's parameters (offset, size) as the driver reports them, asked once;
  // nullptr when the launcher cannot tell.
  const param_layout *parameters();

  // prepare()'s layout; nullptr until prepare() ran or arg_format was set.
  const arg_layout *prepared() const noexcept { return prepared_ ? &*prepared_ : nullptr; }
  // Parses `format`, fits it to parameters() when they are known (TypeError on a mismatch,
  // naming `routine`) and makes it the prepared layout.
  void set_arg_format(const std::string &format, const char *routine);

  // Packs args with the prepared layout into `buffer`. AttributeError if unprepared.
  void pack_prepared_args(PyObject *const *args, std::size_t nargs, arg_buffer &buffer,
                          const char *routine) const;
  // pack_prepared_args(), then launch().
  void prepared_launch(const launch_config &config, PyObject *const *args, std::size_t nargs,
                       arg_buffer &buffer, const char *routine,
                       const launch_attributes &attrs = {}) {
    pack_prepared_args(args, nargs, buffer, routine);
    launch(config, attrs, buffer.data(), buffer.size());
  }

  // Launches an already packed parameter buffer (the launcher checks the geometry), under the
  // module's context when the calling thread has none.
  void launch(const launch_config &config, void *args, std::size_t bytes) {
    const CUfunction f = live_handle("cuLaunchKernel");
    nvtx_range range{name_.c_str()};
    scoped_activation_if_none active(module_->get_context());
    launcher_->launch(f, config, args, bytes);
    last_block = config.block;
  }
  // With launch attributes (clusters, cooperative, ...): cuLaunchKernelEx when any is set.
  void launch(const launch_config &config, const launch_attributes &attrs, void *args,
              std::size_t bytes) {
    if (!attrs.any())
      return launch(config, args, bytes);
    const CUfunction f = live_handle("cuLaunchKernelEx");
    nvtx_range range{name_.c_str()};
    scoped_activation_if_none active(module_->get_context());
    launcher_->launch(f, config, attrs, args, bytes);
    last_block = config.block;
  }

  // The block shape of the last launch: PyCUDA's cuFuncSetBlockShape state, used by the
  // deprecated prepared_call(grid, *args) signature that passes no block.
  std::optional<dim3> last_block;

  // The last grid and block tuples seen and what they parsed to: launch loops pass the same
  // tuple objects every time, so most calls skip parsing. Holds the tuple (its address cannot be
  // reused while cached); only tuples of exact ints are remembered (they cannot change).
  struct dims_memo {
    py::object key;
    dim3 value;
  };
  dims_memo grid_memo, block_memo;

  // What prepare(texrefs=) stored; PyCUDA code reads func.texrefs. Kept here rather than in
  // the instance __dict__ so that prepare() does not create the dict (it slows method lookups).
  py::object texrefs = py::list();

private:
  module_ptr module_;
  cuplug::launcher *launcher_; // owned by module_
  CUfunction handle_;
  std::string name_;
  bool params_asked_ = false;
  bool params_known_ = false;
  param_layout params_;
  std::optional<arg_layout> prepared_;
};

using function_ptr = std::shared_ptr<function>;

} // namespace cuplug::python
