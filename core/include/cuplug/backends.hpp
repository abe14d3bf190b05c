// The backends in use: created from the current selection, cached until the selection changes.
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/compiler.hpp>
#include <cuplug/launcher.hpp>
#include <cuplug/registry.hpp>
#include <cuplug/rng.hpp>

#include <string>

namespace cuplug {

// The object for the selected backend of each kind (config::selected), made once per
// (name, options) and shared. Throws config_error if the selected name is not available.
plugin_ptr<allocator> current_allocator();
plugin_ptr<compiler> current_compiler();
plugin_ptr<launcher> current_launcher();
plugin_ptr<rng> current_rng();

// The shared object for a named backend with its configured options (per-call overrides).
plugin_ptr<plugin_object> backend(plugin_kind kind, const std::string &name);

// Drops cached backend objects (they live on while anything still holds them).
void reset_backends();

} // namespace cuplug
