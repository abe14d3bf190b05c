// Built for one plugin ABI major more than this cuplug provides ("fake_abi2").
#include "fake_entry_points.hpp"
#include "fake_objects.hpp"

extern "C" __attribute__((visibility("default"), used, section("cuplug_manifest")))
const cuplug::plugin_manifest cuplug_plugin_manifest = {
    "CUPLUGM",                                                  // magic
    sizeof(cuplug::plugin_manifest),                            // struct_size
    cuplug::plugin_abi_major + 1,                               // abi_major
    static_cast<std::uint32_t>(cuplug::plugin_kind::allocator), // kind
    cuplug::allocator_interface_version,                        // interface_version
    CUPLUG_ABI_TAG,                                             // abi_tag
    "fake_abi2",                                                // name
    "fake plugin for loader tests",
    "1.0"};

FAKE_CREATE(fake_plugins::host_allocator)
FAKE_DESTROY()
