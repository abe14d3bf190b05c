// The plugin handshake: a fixed-layout manifest read from the file before any plugin code runs.
#pragma once

#include <cuplug/plugin_kinds.hpp>
#include <cuplug/version.hpp>

#include <cstdint>

// Types shared across the plugin boundary (interfaces, errors) keep default visibility even in
// plugins built with -fvisibility=hidden, so their type_info is one object and dynamic_cast /
// catch across the boundary do not depend on name comparison.
#define CUPLUG_API __attribute__((visibility("default")))

namespace cuplug {

// Bumped when the manifest layout or the create/destroy contract changes incompatibly, and when
// something a plugin compiles in changes other than by appending (a driver_api entry removed,
// reordered or retyped: see driver_api.hpp). 2: the manifest carries the driver table's size and
// the cuplug version; the driver table's last two entries changed prototype under ABI 1.
inline constexpr std::uint32_t plugin_abi_major = 2;

// Plain bytes, no pointers (so no relocations): the loader reads it out of the ELF section
// `cuplug_manifest` of the file without loading it. Strings are NUL-terminated within their arrays.
// magic, struct_size and abi_major keep their offsets in every ABI major, so that any cuplug can
// say which ABI a file was built for.
struct plugin_manifest {
  char magic[8];                   // "CUPLUGM" NUL
  std::uint32_t struct_size;       // sizeof(plugin_manifest) the plugin was built with
  std::uint32_t abi_major;         // plugin_abi_major the plugin was built with
  std::uint32_t kind;              // a plugin_kind
  std::uint32_t interface_version; // interface_version(kind) the plugin was built with
  char abi_tag[64];                // compiler / standard library / architecture tag
  char name[32];                   // backend name users select, [a-z0-9_]+
  char description[128];
  char version[16]; // the plugin's own version
  // Entries of cuplug::driver_api the plugin was compiled against (driver_api_entries). The table
  // only grows, so a plugin is refused only when it expects more entries than this cuplug has.
  std::uint32_t driver_api_entries;
  char cuplug_version[16]; // CUPLUG_VERSION_STRING of the headers it was built against
};

inline constexpr const char *manifest_section = "cuplug_manifest";
inline constexpr const char *create_alias = "cuplug_create";
inline constexpr const char *destroy_alias = "cuplug_destroy";

} // namespace cuplug

// The C++ ABI tag: what a plugin and the core must share for C++ objects, std::string and
// std::vector members, exceptions and RTTI to cross between them, and nothing more. The compiler's
// brand and version are not in it: GCC 11, GCC 12 and Clang building against the same libstdc++
// interoperate (like pybind11's "system" compiler type, PR #5439). Three "/"-joined parts:
//   itanium              the Itanium C++ ABI of GCC >= 3.4 and Clang (__GXX_ABI_VERSION 1002..1999:
//                        the numbers within it differ only in rare manglings, which a missing
//                        symbol at dlopen would report by name)
//   libstdc++-cxx11abi1  the standard library and its layout: libstdc++ with the C++11 (1) or the
//                        old (0) std::string / std::list (_GLIBCXX_USE_CXX11_ABI), or libc++-abi1
//   x86_64-lp64          the architecture and the data model (pointer and long sizes)
// A plugin built by a newer GCC than the running libstdc++ passes the tag but may need newer
// GLIBCXX_ symbol versions; dlopen refuses it and the loader names the version and the fix.
// A part that cannot be identified has "unknown" in it, and a tag with "unknown" in it never
// matches any tag, not even an identical one: an unidentified ABI cannot be checked.
#define CUPLUG_ABI_STR2(x) #x
#define CUPLUG_ABI_STR(x) CUPLUG_ABI_STR2(x)
#if defined(__GXX_ABI_VERSION) && __GXX_ABI_VERSION >= 1002 && __GXX_ABI_VERSION < 2000
#define CUPLUG_ABI_CXXABI "itanium"
#else
#define CUPLUG_ABI_CXXABI "cxxabi-unknown"
#endif
#if defined(_LIBCPP_VERSION) && defined(_LIBCPP_ABI_VERSION)
#define CUPLUG_ABI_STDLIB "libc++-abi" CUPLUG_ABI_STR(_LIBCPP_ABI_VERSION)
#elif defined(__GLIBCXX__) && defined(_GLIBCXX_USE_CXX11_ABI)
#define CUPLUG_ABI_STDLIB "libstdc++-cxx11abi" CUPLUG_ABI_STR(_GLIBCXX_USE_CXX11_ABI)
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
#if __SIZEOF_POINTER__ == 8 && __SIZEOF_LONG__ == 8
#define CUPLUG_ABI_DATA_MODEL "lp64"
#elif __SIZEOF_POINTER__ == 4 && __SIZEOF_LONG__ == 4
#define CUPLUG_ABI_DATA_MODEL "ilp32"
#else
#define CUPLUG_ABI_DATA_MODEL "data-model-unknown"
#endif
#define CUPLUG_ABI_TAG                                                                             \
  CUPLUG_ABI_CXXABI "/" CUPLUG_ABI_STDLIB "/" CUPLUG_ABI_ARCH "-" CUPLUG_ABI_DATA_MODEL
