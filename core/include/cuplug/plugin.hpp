// Base of every plugin object, and the one macro that makes a class a loadable plugin.
#pragma once

#include <cuplug/driver_api.hpp>
#include <cuplug/options.hpp>
#include <cuplug/plugin_abi.hpp>

#include <boost/dll/alias.hpp>

#include <cuda.h>

#include <memory>
#include <string>

namespace cuplug {

// The one device-address type every interface takes and returns (allocations, RNG output,
// mapped graphics resources): the driver's own, so no cast is needed at the driver boundary.
using device_ptr = CUdeviceptr;

// Every interface derives from this. Objects are created and destroyed inside their plugin
// (through its create/destroy pair); the core's owning pointer also keeps the library loaded.
class CUPLUG_API plugin_object {
public:
  virtual ~plugin_object() = default;
  plugin_object() = default;
  plugin_object(const plugin_object &) = delete;
  plugin_object &operator=(const plugin_object &) = delete;

  // The backend name it was created under ("pool", "nvrtc"); set by the core after creation.
  const std::string &backend_name() const noexcept { return backend_name_; }
  void set_backend_name(std::string name) { backend_name_ = std::move(name); }

private:
  std::string backend_name_;
};

using create_fn = plugin_object *(const options &);
using destroy_fn = void(plugin_object *);

} // namespace cuplug

// Use once, at namespace scope, in one source file of a plugin:
//   CUPLUG_PLUGIN(allocator, my_allocator, "arena", "one slab, bump allocation", "1.0")
// `Class` must derive from the interface of `kind` and have a constructor taking
// `const cuplug::options &`. The version is the plugin's own: cuplug_add_plugin() defines
// CUPLUG_PLUGIN_VERSION as the version of the CMake project that builds it (cuplug's own plugins
// pass that, so they carry cuplug's version). The manifest also records the plugin ABI, the
// interface version of `kind`, the C++ ABI tag, the size of the driver table and the cuplug
// version the plugin was compiled against, for the loader's handshake.
#define CUPLUG_PLUGIN(kind_, Class, name_, description_, version_)                                 \
  extern "C" __attribute__((visibility("default"), used, section("cuplug_manifest")))              \
  const ::cuplug::plugin_manifest cuplug_plugin_manifest = {                                       \
      "CUPLUGM",                                                                                   \
      sizeof(::cuplug::plugin_manifest),                                                           \
      ::cuplug::plugin_abi_major,                                                                  \
      static_cast<std::uint32_t>(::cuplug::plugin_kind::kind_),                                    \
      ::cuplug::kind_##_interface_version,                                                         \
      CUPLUG_ABI_TAG,                                                                              \
      name_,                                                                                       \
      description_,                                                                                \
      version_,                                                                                    \
      ::cuplug::driver_api_entries,                                                                \
      CUPLUG_VERSION_STRING};                                                                      \
  namespace cuplug_plugin_entry {                                                                  \
  ::cuplug::plugin_object *create(const ::cuplug::options &o) { return new Class(o); }             \
  void destroy(::cuplug::plugin_object *p) { delete p; }                                           \
  }                                                                                                \
  BOOST_DLL_ALIAS(cuplug_plugin_entry::create, cuplug_create)                                      \
  BOOST_DLL_ALIAS(cuplug_plugin_entry::destroy, cuplug_destroy)
