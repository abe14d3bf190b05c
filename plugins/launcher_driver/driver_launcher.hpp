// The "driver" launcher: cuModuleLoadDataEx, cuModuleGetFunction, cuLaunchKernel(Ex) and friends.
#pragma once

#include <cuplug/launcher.hpp>

#include <atomic>

namespace cuplug::plugins {

// Every operation is one driver call in the current context. Creating it needs no driver; the
// driver is opened on first use. Takes no options.
class driver_launcher final : public launcher {
public:
  explicit driver_launcher(const options &opts);

private:
  CUmodule do_load_module(const void *image, std::size_t bytes,
                          const std::vector<jit_option> &options, std::string *info_log) override;
  CUmodule do_load_module_file(const std::string &path) override;
  void do_unload_module(CUmodule module) override;
  CUfunction do_get_function(CUmodule module, const std::string &name) override;
  std::pair<device_ptr, std::size_t> do_get_global(CUmodule module,
                                                   const std::string &name) override;
  void do_launch(CUfunction function, const launch_config &config, void *args,
                 std::size_t arg_bytes) override;
  void do_launch_ex(CUfunction function, const launch_config &config,
                    const launch_attributes &attrs, void *args, std::size_t arg_bytes) override;
  int do_function_attribute(CUfunction function, CUfunction_attribute attribute) override;
  void do_set_function_attribute(CUfunction function, CUfunction_attribute attribute,
                                 int value) override;
  std::optional<std::vector<std::pair<std::size_t, std::size_t>>>
  do_parameter_layout(CUfunction function) override;
  int do_max_active_blocks_per_multiprocessor(CUfunction function, int block_size,
                                              std::size_t dynamic_shared) override;

  // cuLaunchKernel, fetched from the driver table on the first launch and kept, so a launch
  // is one relaxed load and one indirect call before the driver.
  using launch_fn = decltype(&::cuLaunchKernel);
  std::atomic<launch_fn> launch_{nullptr};
  launch_fn first_launch();
};

} // namespace cuplug::plugins
