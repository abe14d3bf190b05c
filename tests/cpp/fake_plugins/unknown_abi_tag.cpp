// Built with a compiler whose ABI could not be identified ("fake_unknown_tag").
#include "fake_entry_points.hpp"
#include "fake_objects.hpp"

extern "C" __attribute__((visibility("default"), used, section("cuplug_manifest")))
const cuplug::plugin_manifest cuplug_plugin_manifest = {
    "CUPLUGM",                                                  // magic
    sizeof(cuplug::plugin_manifest),                            // struct_size
    cuplug::plugin_abi_major,                                   // abi_major
    static_cast<std::uint32_t>(cuplug::plugin_kind::allocator), // kind
    cuplug::allocator_interface_version,                        // interface_version
    "cxxabi-unknown/stdlib-unknown/x86_64-lp64",                // abi_tag
    "fake_unknown_tag",                                         // name
    "fake plugin for loader tests",                             // description
    "1.0",                                                      // version
    cuplug::driver_api_entries,                                 // driver_api_entries
    CUPLUG_VERSION_STRING};                                     // cuplug_version

FAKE_CREATE(fake_plugins::host_allocator)
FAKE_DESTROY()
