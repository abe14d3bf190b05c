// The plugin handshake: a fixed-layout manifest read from the file before any plugin code runs.
#pragma once

#include <cstdint>

// Types shared across the plugin boundary (interfaces, errors) keep default visibility even in
// plugins built with -fvisibility=hidden, so their type_info is one object and dynamic_cast /
// catch across the boundary do not depend on name comparison.
#define CUPLUG_API __attribute__((visibility("default")))

namespace cuplug {

// Bumped when the manifest layout or the create/destroy contract changes incompatibly.
inline constexpr std::uint32_t plugin_abi_major = 1;

enum class plugin_kind : std::uint32_t {
  allocator = 1,
  compiler = 2,
  launcher = 3,
  rng = 4,
  interop = 5,
};

// Version of each interface; a plugin built against another version of its kind is refused.
// 2: device_ptr addresses and the pool controls (pool_statistics, stop_holding, ...).
inline constexpr std::uint32_t allocator_interface_version = 2;
inline constexpr std::uint32_t compiler_interface_version = 1;
inline constexpr std::uint32_t launcher_interface_version = 1;
inline constexpr std::uint32_t rng_interface_version = 1;
inline constexpr std::uint32_t interop_interface_version = 1;

std::uint32_t interface_version(plugin_kind kind) noexcept;
const char *to_string(plugin_kind kind) noexcept;

// Plain bytes, no pointers (so no relocations): the loader reads it out of the ELF section
// `cuplug_manifest` of the file without loading it. Strings are NUL-terminated within their arrays.
struct plugin_manifest {
  char magic[8];                   // "CUPLUGM" NUL
  std::uint32_t struct_size;       // sizeof(plugin_manifest) the plugin was built with
  std::uint32_t abi_major;         // plugin_abi_major the plugin was built with
  std::uint32_t kind;              // a plugin_kind
  std::uint32_t interface_version; // interface_version(kind) the plugin was built with
  char abi_tag[64];                // compiler / standard library / architecture tag
  char name[32];                   // backend name users select, [a-z0-9_]+
  char description[128];
  char version[16];
};

inline constexpr const char *manifest_section = "cuplug_manifest";
inline constexpr const char *create_alias = "cuplug_create";
inline constexpr const char *destroy_alias = "cuplug_destroy";

} // namespace cuplug

// The C++ ABI tag: plugins and core must agree on compiler family, C++ ABI and stdlib ABI.
#if defined(__clang__)
#define CUPLUG_ABI_COMPILER "clang"
#elif defined(__GNUC__)
#define CUPLUG_ABI_COMPILER "gcc"
#else
#define CUPLUG_ABI_COMPILER "unknown"
#endif
#define CUPLUG_ABI_STR2(x) #x
#define CUPLUG_ABI_STR(x) CUPLUG_ABI_STR2(x)
#if defined(_GLIBCXX_USE_CXX11_ABI)
#define CUPLUG_ABI_STDLIB "libstdc++-cxx11abi" CUPLUG_ABI_STR(_GLIBCXX_USE_CXX11_ABI)
#elif defined(_LIBCPP_VERSION)
#define CUPLUG_ABI_STDLIB "libc++" CUPLUG_ABI_STR(_LIBCPP_ABI_VERSION)
#else
#define CUPLUG_ABI_STDLIB "stdlib-unknown"
#endif
#if defined(__x86_64__)
#define CUPLUG_ABI_ARCH "x86_64"
#elif defined(__aarch64__)
#define CUPLUG_ABI_ARCH "aarch64"
#else
#define CUPLUG_ABI_ARCH "arch-unknown"
#endif
#define CUPLUG_ABI_TAG                                                                             \
  CUPLUG_ABI_COMPILER "-cxxabi" CUPLUG_ABI_STR(__GXX_ABI_VERSION) "-" CUPLUG_ABI_STDLIB            \
                                                                  "-" CUPLUG_ABI_ARCH
