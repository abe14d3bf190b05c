// cuMemAlloc / cuMemFree allocator plugin, registered as allocator "device".
#include "device_allocator.hpp"

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

namespace cuplug::plugins {

device_allocator::device_allocator(const options &) {}

device_ptr device_allocator::do_allocate(std::size_t bytes, CUstream) {
  const driver_api &d = driver();
  CUdeviceptr ptr = 0;
  const CUresult result = detail::entry(d.cuMemAlloc, "cuMemAlloc")(&ptr, bytes);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    // Say how much the device had, so "out of memory" can be told from fragmentation or leaks.
    std::size_t free_bytes = 0, total_bytes = 0;
    std::string extra;
    if (d.cuMemGetInfo != nullptr && d.cuMemGetInfo(&free_bytes, &total_bytes) == CUDA_SUCCESS)
      extra = "device has " + std::to_string(free_bytes) + " bytes free";
    throw out_of_memory("cuMemAlloc", bytes, stats().bytes_in_use, 0, total_bytes, extra);
  }
  check(result, "cuMemAlloc");
  return ptr;
}

void device_allocator::do_deallocate(device_ptr ptr, std::size_t, CUstream) {
  CUPLUG_CALL(cuMemFree, ptr);
}

} // namespace cuplug::plugins

CUPLUG_PLUGIN(allocator, cuplug::plugins::device_allocator, "device",
              "cuMemAlloc/cuMemFree for every allocation, no caching", CUPLUG_PLUGIN_VERSION)
