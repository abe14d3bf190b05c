// Two manifests in one library ("fake_double"), as linking two CUPLUG_PLUGIN files would give.
#include "fake_entry_points.hpp"
#include "fake_objects.hpp"

#define FAKE_MANIFEST(variable)                                                                    \
  extern "C" __attribute__((visibility("default"), used, section("cuplug_manifest")))              \
  const cuplug::plugin_manifest variable = {                                                       \
      "CUPLUGM",                                                                                   \
      sizeof(cuplug::plugin_manifest),                                                             \
      cuplug::plugin_abi_major,                                                                    \
      static_cast<std::uint32_t>(cuplug::plugin_kind::allocator),                                  \
      cuplug::allocator_interface_version,                                                         \
      CUPLUG_ABI_TAG,                                                                              \
      "fake_double",                                                                               \
      "fake plugin for loader tests",                                                              \
      "1.0",                                                                                       \
      cuplug::driver_api_entries,                                                                  \
      CUPLUG_VERSION_STRING};
FAKE_MANIFEST(cuplug_plugin_manifest)
FAKE_MANIFEST(cuplug_plugin_manifest_again)

FAKE_CREATE(fake_plugins::host_allocator)
FAKE_DESTROY()
