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

// What a launch asks beyond PyCUDA's (cuLaunchKernelEx's launch attributes).
struct launch_attributes {
  dim3 cluster{0, 0, 0};    // thread-block cluster shape (compute capability 9.0+); all 0: none
  bool cooperative = false; // all blocks co-resident, so the grid can synchronise
  bool has_priority = false;
  int priority = 0;                        // stream priority of this launch, when has_priority
  bool programmatic_serialization = false; // may overlap the previous kernel on the stream
  bool any() const noexcept {
    return has_cluster() || cooperative || has_priority || programmatic_serialization;
  }
  bool has_cluster() const noexcept { return cluster.x != 0 || cluster.y != 0 || cluster.z != 0; }
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
  // launch() with launch attributes. Also checks them against the device and the function
  // before the driver call: clusters need CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, a grid that is a
  // multiple of the cluster shape, and at most 8 blocks per cluster (more only where the
  // function allows non-portable sizes, up to the device's limit); a cooperative launch needs
  // CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH and a grid whose blocks all fit on the device at
  // once. std::invalid_argument names the limit; backends without it throw not_supported.
  void launch(CUfunction function, const launch_config &config, const launch_attributes &attrs,
              void *args, std::size_t arg_bytes);

  [[nodiscard]] int function_attribute(CUfunction function, CUfunction_attribute attribute);
  void set_function_attribute(CUfunction function, CUfunction_attribute attribute, int value);
  // Parameter (offset, size) pairs as the driver reports them (empty for a kernel without
  // parameters); nullopt when the backend cannot tell.
  [[nodiscard]] std::optional<std::vector<std::pair<std::size_t, std::size_t>>>
  parameter_layout(CUfunction function);
  [[nodiscard]] int max_active_blocks_per_multiprocessor(CUfunction function, int block_size,
                                                         std::size_t dynamic_shared);

private:
  void check_launch(CUfunction function, const launch_config &config);

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
  // Launch attributes; the default refuses them (not_supported naming the backend's choice).
  virtual void do_launch_ex(CUfunction function, const launch_config &config,
                            const launch_attributes &attrs, void *args, std::size_t arg_bytes);
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
