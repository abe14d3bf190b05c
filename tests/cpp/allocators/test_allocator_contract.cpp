// The allocator contract, instantiated for every allocator backend and the example plugin.
#include "allocator_contract.hpp"

#include <cuplug/registry.hpp>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

namespace {

using cuplug::memory_kind;
using cuplug::options;
using cuplug::plugin_kind;
using cuplug::test::allocator_case;

// A fresh object of a backend, with options (registry::create, not the shared backend).
std::function<cuplug::plugin_ptr<cuplug::allocator>()>
backend(const std::string &name, std::map<std::string, std::string> opts = {}) {
  return [name, opts] {
    return cuplug::registry::instance().create<cuplug::allocator>(plugin_kind::allocator, name,
                                                                  options(opts));
  };
}

// The example plugin (examples/custom_allocator), built in the tree for this test.
std::function<cuplug::plugin_ptr<cuplug::allocator>()>
arena(std::map<std::string, std::string> opts) {
  static const bool loaded = [] {
    for (const auto &c : cuplug::registry::instance().load(CUPLUG_TEST_ARENA_PLUGIN))
      if (c.outcome != cuplug::plugin_candidate::state::loaded)
        BOOST_FAIL("the arena example did not load: " << c.reason);
    return true;
  }();
  (void)loaded;
  return backend("arena", std::move(opts));
}

// The test pool plugin (tests/cpp/pool/exact_pool_plugin.cpp): a pool that is not the kit's.
std::function<cuplug::plugin_ptr<cuplug::allocator>()>
exact_pool(std::map<std::string, std::string> opts) {
  static const bool loaded = [] {
    for (const auto &c : cuplug::registry::instance().load(CUPLUG_TEST_EXACT_POOL_PLUGIN))
      if (c.outcome != cuplug::plugin_candidate::state::loaded)
        BOOST_FAIL("the exact_pool test plugin did not load: " << c.reason);
    return true;
  }();
  (void)loaded;
  return backend("exact_pool", std::move(opts));
}

std::string log_path() {
  return (std::filesystem::temp_directory_path() /
          ("cuplug_contract_" + std::to_string(getpid()) + ".log"))
      .string();
}

allocator_case host_case() { return {backend("host"), memory_kind::host}; }
allocator_case pool_over_host_case() {
  return {backend("pool", {{"upstream", "host"}}), memory_kind::host};
}
allocator_case limiting_over_host_case() {
  return {backend("limiting", {{"upstream", "host"}, {"limit", "64GiB"}}), memory_kind::host};
}
allocator_case logging_over_host_case() {
  return {backend("logging", {{"upstream", "host"}, {"path", log_path()}}), memory_kind::host};
}
allocator_case exact_pool_over_host_case() {
  return {exact_pool({{"upstream", "host"}}), memory_kind::host};
}
allocator_case arena_over_host_case() {
  return {arena({{"upstream", "host"}, {"slab_size", "64MiB"}}), memory_kind::host, false, false};
}

allocator_case device_case() { return {backend("device"), memory_kind::device, true}; }
allocator_case pool_case() { return {backend("pool"), memory_kind::device, true}; }
allocator_case async_case() { return {backend("async"), memory_kind::device, true}; }
allocator_case managed_case() { return {backend("managed"), memory_kind::managed, true}; }
allocator_case pinned_case() { return {backend("pinned"), memory_kind::pinned_host, true}; }
allocator_case pinned_pooled_case() {
  return {backend("pinned", {{"pooled", "true"}}), memory_kind::pinned_host, true};
}
allocator_case arena_case() {
  return {arena({{"slab_size", "64MiB"}}), memory_kind::device, true, false};
}

} // namespace

using boost::unit_test::label;
using boost::unit_test::precondition;

CUPLUG_ALLOCATOR_CONTRACT(host, host_case, *label("cpu"))
CUPLUG_ALLOCATOR_CONTRACT(pool_over_host, pool_over_host_case, *label("cpu"))
CUPLUG_ALLOCATOR_CONTRACT(limiting_over_host, limiting_over_host_case, *label("cpu"))
CUPLUG_ALLOCATOR_CONTRACT(logging_over_host, logging_over_host_case, *label("cpu"))
CUPLUG_ALLOCATOR_CONTRACT(arena_over_host, arena_over_host_case, *label("cpu"))
CUPLUG_ALLOCATOR_CONTRACT(exact_pool_over_host, exact_pool_over_host_case, *label("cpu"))

CUPLUG_ALLOCATOR_CONTRACT(device, device_case,
                          *label("gpu") * precondition(cuplug::test::gpu_present()))
CUPLUG_ALLOCATOR_CONTRACT(pool, pool_case,
                          *label("gpu") * precondition(cuplug::test::gpu_present()))
CUPLUG_ALLOCATOR_CONTRACT(async, async_case,
                          *label("gpu") * precondition(cuplug::test::gpu_present()))
CUPLUG_ALLOCATOR_CONTRACT(managed, managed_case,
                          *label("gpu") * precondition(cuplug::test::gpu_present()))
CUPLUG_ALLOCATOR_CONTRACT(pinned, pinned_case,
                          *label("gpu") * precondition(cuplug::test::gpu_present()))
CUPLUG_ALLOCATOR_CONTRACT(pinned_pooled, pinned_pooled_case,
                          *label("gpu") * precondition(cuplug::test::gpu_present()))
CUPLUG_ALLOCATOR_CONTRACT(arena, arena_case,
                          *label("gpu") * precondition(cuplug::test::gpu_present()))
