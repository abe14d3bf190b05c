// Says its manifest is 8 bytes longer than it is ("fake_size").
#include "fake_entry_points.hpp"
#include "fake_objects.hpp"

extern "C" __attribute__((visibility("default"), used, section("cuplug_manifest")))
const cuplug::plugin_manifest cuplug_plugin_manifest = {
    "CUPLUGM",                                                  // magic
    sizeof(cuplug::plugin_manifest) + 8,                        // struct_size
    cuplug::plugin_abi_major,                                   // abi_major
    static_cast<std::uint32_t>(cuplug::plugin_kind::allocator), // kind
    cuplug::allocator_interface_version,                        // interface_version
    CUPLUG_ABI_TAG,                                             // abi_tag
    "fake_size",                                                // name
    "fake plugin for loader tests",
    "1.0"};

FAKE_CREATE(fake_plugins::host_allocator)
FAKE_DESTROY()
