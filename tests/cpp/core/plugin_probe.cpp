// Loads one plugin file with this core and reports the handshake's outcome; for an allocator, also
// that an exception the plugin throws is caught here as cuplug's own type (tests/python/
// test_plugin_compilers.py runs it on plugins built by other compilers).
#include <cuplug/allocator.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>

#include <cstdio>
#include <exception>
#include <map>
#include <string>

// Exit codes: 0 loaded (and, for an allocator, its exception caught as cuplug::out_of_memory),
// 2 refused (the reason on stdout), 3 loaded but the exception was not caught as cuplug's type.
int main(int argc, char **argv) {
  using namespace cuplug;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <plugin.so>\n", argv[0]);
    return 64;
  }
  registry &reg = registry::instance();
  const std::vector<plugin_candidate> outcomes = reg.load(argv[1], "explicit");
  if (outcomes.size() != 1 || outcomes[0].outcome != plugin_candidate::state::loaded) {
    for (const plugin_candidate &c : outcomes)
      std::printf("refused: %s\n", c.reason.c_str());
    return 2;
  }
  const plugin_candidate &c = outcomes[0];
  const std::string name(c.manifest.name);
  const auto kind = static_cast<plugin_kind>(c.manifest.kind);
  std::printf("loaded: %s '%s', ABI tag '%s'\n", to_string(kind), name.c_str(), c.manifest.abi_tag);
  if (kind != plugin_kind::allocator)
    return 0;
  try {
    auto a = reg.create<allocator>(
        kind, name, options(std::map<std::string, std::string>{{"capacity", "1024"}}));
    const device_ptr p = a->allocate(64); // made and freed by the plugin's own code
    a->deallocate(p, 64);
    (void)a->allocate(4096); // over its capacity: the plugin throws cuplug::out_of_memory
    std::printf("no exception from an allocation over the capacity\n");
    return 3;
  } catch (const out_of_memory &e) {
    std::printf("caught cuplug::out_of_memory (a cuplug::cuda_error, requested %zu): %s\n",
                e.requested(), e.what());
    return 0;
  } catch (const std::exception &e) {
    std::printf("caught a std::exception that is not cuplug::out_of_memory: %s\n", e.what());
  } catch (...) {
    std::printf("caught an exception of a type this core does not know\n");
  }
  return 3;
}
