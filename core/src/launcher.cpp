// The launcher's public door: launch geometry is checked here, before any driver call.
#include <cuplug/launcher.hpp>

#include "foreign_exceptions.hpp"
#include "launch_attributes.hpp"

#include <cuplug/errors.hpp>

#include <stdexcept>
#include <string>

namespace cuplug {
namespace {

// Limits shared by every GPU CUDA 13 supports (compute capability 7.5 and newer); the driver's
// CU_DEVICE_ATTRIBUTE_MAX_* values are these on all of them, so no per-launch query is needed.
constexpr unsigned max_threads_per_block = 1024;
constexpr unsigned max_block[3] = {1024, 1024, 64};
constexpr unsigned max_grid[3] = {2147483647u, 65535, 65535};
constexpr unsigned default_shared_limit = 48 * 1024;
const char *const axis_name[3] = {"x", "y", "z"};
const char *const block_attr[3] = {"MAX_BLOCK_DIM_X", "MAX_BLOCK_DIM_Y", "MAX_BLOCK_DIM_Z"};
const char *const grid_attr[3] = {"MAX_GRID_DIM_X", "MAX_GRID_DIM_Y", "MAX_GRID_DIM_Z"};

std::string dims(const dim3 &d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

[[noreturn]] void check_geometry_slow(const launch_config &c) {
  const unsigned b[3] = {c.block.x, c.block.y, c.block.z};
  const unsigned g[3] = {c.grid.x, c.grid.y, c.grid.z};
  for (int i = 0; i < 3; ++i) {
    if (b[i] == 0)
      throw std::invalid_argument("block " + dims(c.block) + " has size 0 along " + axis_name[i]);
    if (g[i] == 0)
      throw std::invalid_argument("grid " + dims(c.grid) + " has size 0 along " + axis_name[i]);
    if (b[i] > max_block[i])
      throw std::invalid_argument("block " + dims(c.block) + " is " + std::to_string(b[i]) +
                                  " along " + axis_name[i] + "; the limit is " +
                                  std::to_string(max_block[i]) + " (device_attribute." +
                                  block_attr[i] + ")");
    if (g[i] > max_grid[i])
      throw std::invalid_argument("grid " + dims(c.grid) + " is " + std::to_string(g[i]) +
                                  " along " + axis_name[i] + "; the limit is " +
                                  std::to_string(max_grid[i]) + " (device_attribute." +
                                  grid_attr[i] + ")");
  }
  const unsigned long long threads = 1ull * b[0] * b[1] * b[2];
  throw std::invalid_argument("block " + dims(c.block) + " has " + std::to_string(threads) +
                              " threads; the limit is " + std::to_string(max_threads_per_block) +
                              " threads per block (device_attribute.MAX_THREADS_PER_BLOCK)");
}

} // namespace

CUmodule launcher::load_module(const void *image, std::size_t bytes,
                               const std::vector<jit_option> &options, std::string *info_log) {
  if (image == nullptr || bytes == 0)
    throw std::invalid_argument("cannot load a module from an empty image");
  try {
    return do_load_module(image, bytes, options, info_log);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "launcher", "load_module");
  }
}

CUmodule launcher::load_module_file(const std::string &path) {
  try {
    return do_load_module_file(path);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "launcher", "load_module_file");
  }
}

void launcher::unload_module(CUmodule module) noexcept {
  try {
    do_unload_module(module);
  } catch (...) {
    // Unloading happens in destructors; a dead context has already released the module.
  }
}

CUfunction launcher::get_function(CUmodule module, const std::string &name) {
  try {
    return do_get_function(module, name);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "launcher", "get_function");
  }
}

std::pair<device_ptr, std::size_t> launcher::get_global(CUmodule module, const std::string &name) {
  try {
    return do_get_global(module, name);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "launcher", "get_global");
  }
}

// Grid, block and dynamic shared memory against the limits, before any driver call.
void launcher::check_launch(CUfunction function, const launch_config &c) {
  const bool block_ok = c.block.x - 1 < max_block[0] && c.block.y - 1 < max_block[1] &&
                        c.block.z - 1 < max_block[2] &&
                        1ull * c.block.x * c.block.y * c.block.z <= max_threads_per_block;
  const bool grid_ok =
      c.grid.x - 1 < max_grid[0] && c.grid.y - 1 < max_grid[1] && c.grid.z - 1 < max_grid[2];
  if (!block_ok || !grid_ok)
    check_geometry_slow(c);
  if (c.shared_bytes > default_shared_limit) {
    const int limit =
        do_function_attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
    if (c.shared_bytes > static_cast<unsigned>(limit))
      throw std::invalid_argument(
          "launch asks for " + std::to_string(c.shared_bytes) +
          " bytes of dynamic shared memory; this function's limit is " + std::to_string(limit) +
          " (function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES): raise it with "
          "set_attribute(function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, n), up to "
          "device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN");
  }
}

void launcher::launch(CUfunction function, const launch_config &c, void *args,
                      std::size_t arg_bytes) {
  check_launch(function, c);
  try {
    do_launch(function, c, args, arg_bytes);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "launcher", "launch");
  }
}

void launcher::launch(CUfunction function, const launch_config &c, const launch_attributes &a,
                      void *args, std::size_t arg_bytes) {
  if (!a.any())
    return launch(function, c, args, arg_bytes);
  check_launch(function, c);
  detail::check_launch_attributes(*this, function, c, a);
  try {
    do_launch_ex(function, c, a, args, arg_bytes);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "launcher", "launch");
  }
}

void launcher::do_launch_ex(CUfunction, const launch_config &, const launch_attributes &, void *,
                            std::size_t) {
  throw not_supported("launcher '" + backend_name() +
                      "' cannot launch with clusters, cooperative launches or launch "
                      "attributes; choose the 'driver' launcher (CUPLUG_LAUNCHER=driver)");
}

int launcher::function_attribute(CUfunction function, CUfunction_attribute attribute) {
  try {
    return do_function_attribute(function, attribute);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "launcher", "function_attribute");
  }
}

void launcher::set_function_attribute(CUfunction function, CUfunction_attribute attribute,
                                      int value) {
  try {
    do_set_function_attribute(function, attribute, value);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "launcher", "set_function_attribute");
  }
}

std::optional<std::vector<std::pair<std::size_t, std::size_t>>>
launcher::parameter_layout(CUfunction function) {
  try {
    return do_parameter_layout(function);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "launcher", "parameter_layout");
  }
}

int launcher::max_active_blocks_per_multiprocessor(CUfunction function, int block_size,
                                                   std::size_t dynamic_shared) {
  if (block_size <= 0)
    throw std::invalid_argument("block size must be positive");
  try {
    return do_max_active_blocks_per_multiprocessor(function, block_size, dynamic_shared);
  } catch (...) {
    detail::rethrow_as_core_error(*this, "launcher", "max_active_blocks_per_multiprocessor");
  }
}

} // namespace cuplug
