// The "managed" allocator: unified memory from cuMemAllocManaged.
#include <cuplug/allocator.hpp>
#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/options.hpp>
#include <cuplug/plugin.hpp>

#include <cuda.h>

#include <string>

namespace cuplug::plugins {
namespace {

unsigned attach_flag(const options &opts) {
  const std::string attach = opts.get_string("attach", "global");
  if (attach == "global")
    return CU_MEM_ATTACH_GLOBAL;
  if (attach == "host")
    return CU_MEM_ATTACH_HOST;
  throw config_error("allocator 'managed': option 'attach' is '" + attach +
                     "', expected 'global' (any stream may use it) or 'host' (host only until "
                     "attached to a stream)");
}

// Option `attach`: "global" (default, CU_MEM_ATTACH_GLOBAL) or "host" (CU_MEM_ATTACH_HOST).
// Freed with cuMemFree, which waits for the device's work, so stream order holds.
class managed_allocator final : public allocator {
public:
  explicit managed_allocator(const options &opts) : flag_(attach_flag(opts)) {}

private:
  device_ptr do_allocate(std::size_t bytes, CUstream) override {
    CUdeviceptr p = 0;
    const CUresult r =
        detail::entry(driver().cuMemAllocManaged, "cuMemAllocManaged")(&p, bytes, flag_);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      throw out_of_memory("cuMemAllocManaged", bytes, stats().bytes_in_use, 0, 0);
    check(r, "cuMemAllocManaged");
    return p;
  }

  void do_deallocate(device_ptr ptr, std::size_t, CUstream) override {
    CUPLUG_CALL(cuMemFree, ptr);
  }

  memory_kind do_kind() const override { return memory_kind::managed; }

  const unsigned flag_;
};

} // namespace
} // namespace cuplug::plugins

CUPLUG_PLUGIN(allocator, cuplug::plugins::managed_allocator, "managed",
              "unified memory from cuMemAllocManaged (option attach: global/host)",
              CUPLUG_PLUGIN_VERSION)
