// The upstream allocator of an adaptor plugin (pool, limiting, logging, ...), made through the
// registry with one cycle guard for every plugin.
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/options.hpp>
#include <cuplug/plugin_abi.hpp>
#include <cuplug/registry.hpp>

#include <string>

namespace cuplug::pool {

// Call once in an adaptor's constructor. When the registry is creating the adaptor over an
// allocator object (registry::create_adaptor), returns that object. Otherwise reads option
// `upstream`, the backend the adaptor draws from (default: the default allocator backend,
// config::builtin_default), and returns a fresh object of it with that backend's configured
// options: fresh, not the shared backend, so it counts only what the adaptor asked of it.
// `adaptor` names the caller in messages ("pool").
// Throws config_error for an empty or unknown name, and for a chain more than 16 adaptors deep
// (a cycle in the `upstream` options: pool -> limiting -> pool -> ...).
CUPLUG_API plugin_ptr<allocator> make_upstream(const options &opts, const std::string &adaptor);

} // namespace cuplug::pool
