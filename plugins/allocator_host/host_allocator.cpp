// The "host" allocator: plain aligned host memory, for tests, CI and as a host upstream.
#include <cuplug/allocator.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/options.hpp>
#include <cuplug/plugin.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace cuplug::plugins {
namespace {

// Small blocks come from aligned_alloc; blocks of `map_threshold` bytes or more are mapped with
// MAP_NORESERVE, so they take address space and no memory until touched: a test can allocate
// more than the machine has (sizes > 4 GiB on a small CI box) as long as it does not write it
// all. Streams mean nothing here: memory is usable and released at once. Options: `alignment`
// (power of two from allocation_alignment, 256 like cuMemAlloc, to the page size; default 256) and
// `map_threshold` (default 1 MiB).
class host_allocator final : public allocator {
public:
  explicit host_allocator(const options &opts)
      : alignment_(opts.get_bytes("alignment", allocation_alignment)),
        map_threshold_(opts.get_bytes("map_threshold", std::size_t{1} << 20)) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    // Below allocation_alignment the interface's promise would not hold.
    if (alignment_ < allocation_alignment || alignment_ > page ||
        (alignment_ & (alignment_ - 1)) != 0)
      throw config_error("allocator 'host': option 'alignment' is " + std::to_string(alignment_) +
                         ", expected a power of two from " + std::to_string(allocation_alignment) +
                         " to the page size " + std::to_string(page));
    if (map_threshold_ == 0)
      throw config_error("allocator 'host': option 'map_threshold' must be at least 1 byte");
  }

private:
  device_ptr do_allocate(std::size_t bytes, CUstream) override {
    void *p = nullptr;
    if (bytes >= map_threshold_) {
      p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
               -1, 0);
      if (p == MAP_FAILED)
        fail("mmap", bytes, errno);
    } else {
      const std::size_t rounded = (bytes + alignment_ - 1) & ~(alignment_ - 1);
      p = std::aligned_alloc(alignment_, rounded);
      if (p == nullptr)
        fail("aligned_alloc", bytes, ENOMEM);
    }
    return reinterpret_cast<device_ptr>(p);
  }

  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream) override {
    void *p = reinterpret_cast<void *>(ptr);
    if (bytes >= map_threshold_) {
      if (munmap(p, bytes) != 0)
        throw std::runtime_error(std::string("munmap failed: ") + std::strerror(errno));
    } else {
      std::free(p);
    }
  }

  memory_kind do_kind() const override { return memory_kind::host; }

  [[noreturn]] void fail(const char *call, std::size_t bytes, int err) const {
    throw out_of_memory("host_allocator::allocate", bytes, stats().bytes_in_use, 0, 0,
                        std::string(call) + ": " + std::strerror(err));
  }

  std::size_t alignment_;
  std::size_t map_threshold_;
};

} // namespace
} // namespace cuplug::plugins

CUPLUG_PLUGIN(allocator, cuplug::plugins::host_allocator, "host",
              "plain aligned host memory (tests, CI, host upstream of a pool)",
              CUPLUG_PLUGIN_VERSION)
