// The JIT options the fake honours (log buffers, wall time) for cuModuleLoadDataEx and
// cuLinkCreate.
#include "module_image.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace fake {

CUresult jit_options::parse(unsigned count, const CUjit_option *options, void **values) {
  if (count == 0)
    return CUDA_SUCCESS;
  if (!options || !values)
    return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    auto as_size = [&] { return static_cast<size_t>(reinterpret_cast<uintptr_t>(values[i])); };
    switch (options[i]) {
    case CU_JIT_ERROR_LOG_BUFFER:
      error_log = static_cast<char *>(values[i]);
      break;
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
      error_log_size = as_size();
      error_log_size_slot = &values[i];
      break;
    case CU_JIT_INFO_LOG_BUFFER:
      info_log = static_cast<char *>(values[i]);
      break;
    case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
      info_log_size = as_size();
      info_log_size_slot = &values[i];
      break;
    case CU_JIT_WALL_TIME:
      wall_time_slot = &values[i];
      break;
    default:
      if (unsigned(options[i]) > CU_JIT_SPLIT_COMPILE)
        return CUDA_ERROR_INVALID_VALUE;
      break; // accepted and without effect: the fake compiles nothing
    }
  }
  return CUDA_SUCCESS;
}

void jit_options::write_logs(const std::string &error, const std::string &info) const {
  auto write = [](char *buffer, size_t size, void **slot, const std::string &text) {
    if (!buffer || size == 0)
      return;
    size_t n = std::min(text.size(), size - 1);
    std::memcpy(buffer, text.data(), n);
    buffer[n] = '\0';
    if (slot)
      *slot = reinterpret_cast<void *>(static_cast<uintptr_t>(n));
  };
  write(error_log, error_log_size, error_log_size_slot, error);
  write(info_log, info_log_size, info_log_size_slot, info);
  if (wall_time_slot) {
    float ms = 0.0f;
    std::memcpy(wall_time_slot, &ms, sizeof ms);
  }
}

} // namespace fake
