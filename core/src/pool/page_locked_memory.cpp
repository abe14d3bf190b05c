// cuMemHostAlloc / cuMemFreeHost as an allocator, shared by the "pinned" plugin and the Python
// PageLockedAllocator.
#include <cuplug/pool/page_locked_memory.hpp>

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

namespace cuplug::pool {

unsigned host_alloc_flags(long long raw, const std::string &what) {
  constexpr long long known =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (raw < 0 || (raw & ~known) != 0)
    throw config_error(what + " is " + std::to_string(raw) +
                       ", expected a combination of CU_MEMHOSTALLOC_PORTABLE (1), DEVICEMAP (2) "
                       "and WRITECOMBINED (4)");
  return static_cast<unsigned>(raw);
}

page_locked_memory::page_locked_memory(unsigned flags)
    : flags_(host_alloc_flags(flags, "page-locked memory: flags")) {}

device_ptr page_locked_memory::do_allocate(std::size_t bytes, CUstream) {
  void *p = nullptr;
  const CUresult r = detail::entry(driver().cuMemHostAlloc, "cuMemHostAlloc")(&p, bytes, flags_);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw out_of_memory("cuMemHostAlloc", bytes, stats().bytes_in_use, 0, 0);
  check(r, "cuMemHostAlloc");
  return reinterpret_cast<device_ptr>(p);
}

void page_locked_memory::do_deallocate(device_ptr ptr, std::size_t, CUstream) {
  CUPLUG_CALL(cuMemFreeHost, reinterpret_cast<void *>(ptr));
}

} // namespace cuplug::pool
