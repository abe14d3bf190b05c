// Built against libc++, not the core's standard library: refused by its ABI tag ("fake_tag").
#include "fake_entry_points.hpp"
#include "fake_objects.hpp"

extern "C" __attribute__((visibility("default"), used, section("cuplug_manifest")))
const cuplug::plugin_manifest cuplug_plugin_manifest = {
    "CUPLUGM",                                                  // magic
    sizeof(cuplug::plugin_manifest),                            // struct_size
    cuplug::plugin_abi_major,                                   // abi_major
    static_cast<std::uint32_t>(cuplug::plugin_kind::allocator), // kind
    cuplug::allocator_interface_version,                        // interface_version
    "itanium/libc++-abi1/x86_64-lp64",                          // abi_tag
    "fake_tag",                                                 // name
    "fake plugin for loader tests",
    "1.0"};

FAKE_CREATE(fake_plugins::host_allocator)
FAKE_DESTROY()
