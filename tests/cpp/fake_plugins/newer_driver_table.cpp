// Built against a later cuplug whose driver table has one more entry ("fake_newer_driver").
#include "fake_entry_points.hpp"
#include "fake_objects.hpp"

extern "C" __attribute__((visibility("default"), used, section("cuplug_manifest")))
const cuplug::plugin_manifest cuplug_plugin_manifest = {
    "CUPLUGM",                                                  // magic
    sizeof(cuplug::plugin_manifest),                            // struct_size
    cuplug::plugin_abi_major,                                   // abi_major
    static_cast<std::uint32_t>(cuplug::plugin_kind::allocator), // kind
    cuplug::allocator_interface_version,                        // interface_version
    CUPLUG_ABI_TAG,                                             // abi_tag
    "fake_newer_driver",                                        // name
    "fake plugin for loader tests",                             // description
    "1.0",                                                      // version
    cuplug::driver_api_entries + 1,                             // driver_api_entries
    "99.0.0"};                                                  // cuplug_version

FAKE_CREATE(fake_plugins::host_allocator)
FAKE_DESTROY()
