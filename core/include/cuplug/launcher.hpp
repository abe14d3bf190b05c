// The launcher interface: load images into modules, look up functions and globals, launch.
#pragma once

#include <cuplug/plugin.hpp>
#include <cuplug/plugin_abi.hpp>

#include <cuda.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cuplug {

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct launch_config {
  dim3 grid;
  dim3 block;
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
};

struct jit_option {
  CUjit_option option;
  long long value;
};

// All calls act in the current context. Errors are cuda_error; load errors carry the JIT log. A
// plugin's other exceptions (not cuplug::error) arrive as plugin_error naming the backend.
class CUPLUG_API launcher : public plugin_object {
public:
  // image: cubin, PTX (NUL-terminated or not) or fatbin bytes. The module is the caller's to
  // unload.
  [[nodiscard]] CUmodule load_module(const void *image, std::size_t bytes,
                                     const std::vector<jit_option> &options = {},
                                     std::string *info_log = nullptr);
  [[nodiscard]] CUmodule load_module_file(const std::string &path);
  void unload_module(CUmodule module) noexcept;
  [[nodiscard]] CUfunction get_function(CUmodule module, const std::string &name);
  // The device address and size of a module's __device__ variable.
  [[nodiscard]] std::pair<device_ptr, std::size_t> get_global(CUmodule module,
                                                              const std::string &name);

  // args: a buffer laid out as the kernel's parameters (CU_LAUNCH_PARAM_BUFFER_POINTER).
  // Checks grid/block/shared against the device's limits before calling the driver and throws
  // std::invalid_argument naming the limit.
  void launch(CUfunction function, const launch_config &config, void *args, std::size_t arg_bytes);

  [[nodiscard]] int function_attribute(CUfunction function, CUfunction_attribute attribute);
  void set_function_attribute(CUfunction function, CUfunction_attribute attribute, int value);
  // Parameter (offset, size) pairs as the driver reports them (empty for a kernel without
  // parameters); nullopt when the backend cannot tell.
  [[nodiscard]] std::optional<std::vector<std::pair<std::size_t, std::size_t>>>
  parameter_layout(CUfunction function);
  [[nodiscard]] int max_active_blocks_per_multiprocessor(CUfunction function, int block_size,
                                                         std::size_t dynamic_shared);

private:
  virtual CUmodule do_load_module(const void *image, std::size_t bytes,
                                  const std::vector<jit_option> &options,
                                  std::string *info_log) = 0;
  virtual CUmodule do_load_module_file(const std::string &path) = 0;
  virtual void do_unload_module(CUmodule module) = 0;
  virtual CUfunction do_get_function(CUmodule module, const std::string &name) = 0;
  virtual std::pair<device_ptr, std::size_t> do_get_global(CUmodule module,
                                                           const std::string &name) = 0;
  virtual void do_launch(CUfunction function, const launch_config &config, void *args,
                         std::size_t arg_bytes) = 0;
  virtual int do_function_attribute(CUfunction function, CUfunction_attribute attribute) = 0;
  virtual void do_set_function_attribute(CUfunction function, CUfunction_attribute attribute,
                                         int value) = 0;
  virtual std::optional<std::vector<std::pair<std::size_t, std::size_t>>>
  do_parameter_layout(CUfunction) {
    return std::nullopt;
  }
  virtual int do_max_active_blocks_per_multiprocessor(CUfunction function, int block_size,
                                                      std::size_t dynamic_shared) = 0;
};

} // namespace cuplug
