// Declares plugin kind 42 ("fake_kind42"), which no cuplug knows.
#include "fake_entry_points.hpp"
#include "fake_objects.hpp"

extern "C" __attribute__((visibility("default"), used, section("cuplug_manifest")))
const cuplug::plugin_manifest cuplug_plugin_manifest = {
    "CUPLUGM",                       // magic
    sizeof(cuplug::plugin_manifest), // struct_size
    cuplug::plugin_abi_major,        // abi_major
    42,                              // kind
    1,                               // interface_version
    CUPLUG_ABI_TAG,                  // abi_tag
    "fake_kind42",                   // name
    "fake plugin for loader tests",
    "1.0"};

FAKE_CREATE(fake_plugins::host_allocator)
FAKE_DESTROY()
