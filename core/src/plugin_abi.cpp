// Names and interface versions of the plugin kinds.
#include <cuplug/plugin_abi.hpp>

namespace cuplug {

std::uint32_t interface_version(plugin_kind kind) noexcept {
  switch (kind) {
  case plugin_kind::allocator: return allocator_interface_version;
  case plugin_kind::compiler: return compiler_interface_version;
  case plugin_kind::launcher: return launcher_interface_version;
  case plugin_kind::rng: return rng_interface_version;
  case plugin_kind::interop: return interop_interface_version;
  }
  return 0;
}

const char *to_string(plugin_kind kind) noexcept {
  switch (kind) {
  case plugin_kind::allocator: return "allocator";
  case plugin_kind::compiler: return "compiler";
  case plugin_kind::launcher: return "launcher";
  case plugin_kind::rng: return "rng";
  case plugin_kind::interop: return "interop";
  }
  return "unknown";
}

} // namespace cuplug
