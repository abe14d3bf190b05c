// Launcher plugin over the CUDA driver API, registered as launcher "driver".
#include "driver_launcher.hpp"

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

namespace cuplug::plugins {
namespace {

// PyCUDA's size for the JIT's info and error logs (module_from_buffer).
constexpr std::size_t jit_log_bytes = 32 * 1024;

// PTX must reach the driver NUL-terminated; cubins and fatbins are binary and must not be
// touched. Binary images start with the ELF magic or one of the fatbin magics.
bool is_text_image(const void *image, std::size_t bytes) {
  if (bytes >= 4 && std::memcmp(image,
                                "\x7f"
                                "ELF",
                                4) == 0)
    return false;
  std::uint32_t magic = 0;
  if (bytes >= sizeof magic)
    std::memcpy(&magic, image, sizeof magic);
  constexpr std::uint32_t fatbin_magic = 0xBA55ED50u, fatbin_wrapper_magic = 0x466243B1u;
  return magic != fatbin_magic && magic != fatbin_wrapper_magic;
}

bool is_log_option(CUjit_option o) {
  return o == CU_JIT_INFO_LOG_BUFFER || o == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES ||
         o == CU_JIT_ERROR_LOG_BUFFER || o == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
}

std::string log_text(const std::vector<char> &buffer) {
  return std::string(buffer.data(), strnlen(buffer.data(), buffer.size()));
}

} // namespace

driver_launcher::driver_launcher(const options &) {}

CUmodule driver_launcher::do_load_module(const void *image, std::size_t bytes,
                                         const std::vector<jit_option> &options,
                                         std::string *info_log) {
  const driver_api &d = driver();
  std::string terminated;
  const void *data = image;
  if (is_text_image(image, bytes) && static_cast<const char *>(image)[bytes - 1] != '\0') {
    terminated.assign(static_cast<const char *>(image), bytes);
    data = terminated.c_str();
  }
  std::vector<char> info(jit_log_bytes, '\0'), error(jit_log_bytes, '\0');
  // The log buffers are ours; a caller's log options would point the driver at bad memory.
  std::vector<CUjit_option> keys = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                    CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  std::vector<void *> values = {info.data(), reinterpret_cast<void *>(jit_log_bytes - 1),
                                error.data(), reinterpret_cast<void *>(jit_log_bytes - 1)};
  for (const jit_option &o : options) {
    if (is_log_option(o.option))
      continue;
    keys.push_back(o.option);
    values.push_back(reinterpret_cast<void *>(static_cast<std::intptr_t>(o.value)));
  }
  CUmodule module = nullptr;
  const CUresult result = detail::entry(d.cuModuleLoadDataEx, "cuModuleLoadDataEx")(
      &module, data, static_cast<unsigned>(keys.size()), keys.data(), values.data());
  if (info_log != nullptr)
    *info_log = log_text(info);
  if (result != CUDA_SUCCESS)
    throw cuda_error("cuModuleLoadDataEx", result, log_text(error));
  return module;
}

CUmodule driver_launcher::do_load_module_file(const std::string &path) {
  CUmodule module = nullptr;
  const CUresult result =
      detail::entry(driver().cuModuleLoad, "cuModuleLoad")(&module, path.c_str());
  if (result != CUDA_SUCCESS)
    throw cuda_error("cuModuleLoad", result, path);
  return module;
}

void driver_launcher::do_unload_module(CUmodule module) { CUPLUG_CALL(cuModuleUnload, module); }

CUfunction driver_launcher::do_get_function(CUmodule module, const std::string &name) {
  CUfunction function = nullptr;
  const CUresult result = detail::entry(driver().cuModuleGetFunction,
                                        "cuModuleGetFunction")(&function, module, name.c_str());
  if (result != CUDA_SUCCESS)
    throw cuda_error("cuModuleGetFunction", result, "function '" + name + "'");
  return function;
}

std::pair<device_ptr, std::size_t> driver_launcher::do_get_global(CUmodule module,
                                                                  const std::string &name) {
  device_ptr ptr = 0;
  std::size_t bytes = 0;
  const CUresult result = detail::entry(driver().cuModuleGetGlobal,
                                        "cuModuleGetGlobal")(&ptr, &bytes, module, name.c_str());
  if (result != CUDA_SUCCESS)
    throw cuda_error("cuModuleGetGlobal", result, "global '" + name + "'");
  return {ptr, bytes};
}

driver_launcher::launch_fn driver_launcher::first_launch() {
  launch_fn fn = detail::entry(driver().cuLaunchKernel, "cuLaunchKernel");
  launch_.store(fn, std::memory_order_relaxed);
  return fn;
}

void driver_launcher::do_launch(CUfunction function, const launch_config &c, void *args,
                                std::size_t arg_bytes) {
  launch_fn fn = launch_.load(std::memory_order_relaxed);
  if (__builtin_expect(fn == nullptr, 0))
    fn = first_launch();
  std::size_t size = arg_bytes;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  const CUresult result =
      fn(function, c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z, c.shared_bytes,
         c.stream, nullptr, arg_bytes != 0 ? extra : nullptr);
  if (__builtin_expect(result != CUDA_SUCCESS, 0))
    check(result, "cuLaunchKernel");
}

// Clusters, cooperative launches, priorities and programmatic serialisation are attributes of
// one cuLaunchKernelEx; the core checked them against the device already.
void driver_launcher::do_launch_ex(CUfunction function, const launch_config &c,
                                   const launch_attributes &a, void *args, std::size_t arg_bytes) {
  CUlaunchAttribute attrs[4] = {};
  unsigned n = 0;
  if (a.has_cluster()) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = a.cluster.x;
    attrs[n].value.clusterDim.y = a.cluster.y;
    attrs[n++].value.clusterDim.z = a.cluster.z;
  }
  if (a.cooperative) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n++].value.cooperative = 1;
  }
  if (a.has_priority) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attrs[n++].value.priority = a.priority;
  }
  if (a.programmatic_serialization) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n++].value.programmaticStreamSerializationAllowed = 1;
  }
  CUlaunchConfig config{};
  config.gridDimX = c.grid.x, config.gridDimY = c.grid.y, config.gridDimZ = c.grid.z;
  config.blockDimX = c.block.x, config.blockDimY = c.block.y, config.blockDimZ = c.block.z;
  config.sharedMemBytes = c.shared_bytes;
  config.hStream = c.stream;
  config.attrs = attrs;
  config.numAttrs = n;
  // Parameters one by one where their offsets are known: cooperative launches do not take the
  // packed buffer (`extra`) on every driver.
  std::vector<void *> params;
  if (auto layout = do_parameter_layout(function)) {
    for (const auto &p : *layout)
      params.push_back(static_cast<unsigned char *>(args) + p.first);
    CUPLUG_CALL(cuLaunchKernelEx, &config, function, params.empty() ? nullptr : params.data(),
                nullptr);
    return;
  }
  std::size_t size = arg_bytes;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  CUPLUG_CALL(cuLaunchKernelEx, &config, function, nullptr, arg_bytes != 0 ? extra : nullptr);
}

int driver_launcher::do_function_attribute(CUfunction function, CUfunction_attribute attribute) {
  int value = 0;
  CUPLUG_CALL(cuFuncGetAttribute, &value, attribute, function);
  return value;
}

void driver_launcher::do_set_function_attribute(CUfunction function, CUfunction_attribute attribute,
                                                int value) {
  CUPLUG_CALL(cuFuncSetAttribute, function, attribute, value);
}

std::optional<std::vector<std::pair<std::size_t, std::size_t>>>
driver_launcher::do_parameter_layout(CUfunction function) {
  const driver_api &d = driver();
  std::vector<std::pair<std::size_t, std::size_t>> layout;
  if (d.cuFuncGetParamInfo == nullptr)
    return std::nullopt; // drivers before 12.4 cannot say
  // The driver has no parameter count: ask for indices until it says there is no such one.
  for (std::size_t index = 0;; ++index) {
    std::size_t offset = 0, size = 0;
    const CUresult result = d.cuFuncGetParamInfo(function, index, &offset, &size);
    if (result == CUDA_ERROR_INVALID_VALUE)
      break;
    if (result == CUDA_ERROR_NOT_SUPPORTED)
      return std::nullopt;
    check(result, "cuFuncGetParamInfo");
    layout.emplace_back(offset, size);
  }
  return layout;
}

int driver_launcher::do_max_active_blocks_per_multiprocessor(CUfunction function, int block_size,
                                                             std::size_t dynamic_shared) {
  int blocks = 0;
  CUPLUG_CALL(cuOccupancyMaxActiveBlocksPerMultiprocessor, &blocks, function, block_size,
              dynamic_shared);
  return blocks;
}

} // namespace cuplug::plugins

CUPLUG_PLUGIN(launcher, cuplug::plugins::driver_launcher, "driver",
              "modules and launches through the CUDA driver API (cuLaunchKernel)",
              CUPLUG_PLUGIN_VERSION)
