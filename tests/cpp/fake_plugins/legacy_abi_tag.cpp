// A plugin with a tag of the first format, which named the compiler ("clang-cxxabi1002-..."):
// loaded by a core built by another compiler, as only the C++ ABI, library and arch must match.
#include "fake_entry_points.hpp"
#include "fake_objects.hpp"

#define LEGACY_TAG "clang-cxxabi1002-" CUPLUG_ABI_STDLIB "-" CUPLUG_ABI_ARCH

extern "C" __attribute__((visibility("default"), used, section("cuplug_manifest")))
const cuplug::plugin_manifest cuplug_plugin_manifest = {
    "CUPLUGM",                                                  // magic
    sizeof(cuplug::plugin_manifest),                            // struct_size
    cuplug::plugin_abi_major,                                   // abi_major
    static_cast<std::uint32_t>(cuplug::plugin_kind::allocator), // kind
    cuplug::allocator_interface_version,                        // interface_version
    LEGACY_TAG,                                                 // abi_tag
    "fake_legacy_tag",                                          // name
    "fake plugin for loader tests",
    "1.0"};

FAKE_CREATE(fake_plugins::host_allocator)
FAKE_DESTROY()
