// Creates an adaptor's upstream allocator by backend name, with that backend's configured options.
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/config.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>

#include <string>

namespace cuplug::pool {

// A fresh object (not the shared backend), so an adaptor's upstream counts only what the
// adaptor asked of it. `adaptor` names the caller in messages ("pool"). A chain deeper than 16
// is taken for a cycle in the `upstream` options (pool -> limiting -> pool -> ...).
inline plugin_ptr<allocator> make_upstream(const std::string &name, const std::string &adaptor) {
  static thread_local int depth = 0;
  if (name.empty())
    throw config_error("allocator '" + adaptor + "': option 'upstream' is empty; name an " +
                       "allocator backend such as 'device' or 'host'");
  if (depth >= 16)
    throw config_error("allocator '" + adaptor + "': upstream chain is more than 16 allocators " +
                       "deep; the `upstream` options probably form a cycle");
  struct nesting {
    nesting() { ++depth; }
    ~nesting() { --depth; }
  } guard;
  try {
    return registry::instance().create<allocator>(
        plugin_kind::allocator, name,
        config::instance().plugin_options(plugin_kind::allocator, name));
  } catch (const config_error &e) {
    throw config_error("allocator '" + adaptor + "': cannot create its upstream '" + name +
                       "': " + e.what());
  }
}

} // namespace cuplug::pool
