// An adaptor's upstream, made through the registry, with one cycle guard for every plugin.
#include <cuplug/pool/make_upstream.hpp>

#include "../registry_upstream.hpp"

#include <cuplug/config.hpp>
#include <cuplug/errors.hpp>

namespace cuplug::pool {

plugin_ptr<allocator> make_upstream(const options &opts, const std::string &adaptor) {
  // Read even when an object is given, so that a configured `upstream` is not "unknown".
  const std::string name =
      opts.get_string("upstream", config::builtin_default(plugin_kind::allocator));
  if (plugin_ptr<allocator> given = detail::take_offered_upstream())
    return given; // registry::create_adaptor: the object wins over the option
  // Here in the core, so one count covers a chain that runs through several plugins.
  static thread_local int depth = 0;
  if (name.empty())
    throw config_error("allocator '" + adaptor + "': option 'upstream' is empty; name an " +
                       "allocator backend such as 'device' or 'host'");
  if (depth >= 16)
    throw config_error("allocator '" + adaptor + "': upstream chain is more than 16 allocators " +
                       "deep; the `upstream` options probably form a cycle");
  struct nesting {
    nesting() { ++depth; }
    ~nesting() { --depth; }
  } guard;
  try {
    return registry::instance().create<allocator>(
        plugin_kind::allocator, name,
        config::instance().plugin_options(plugin_kind::allocator, name));
  } catch (const config_error &e) {
    throw config_error("allocator '" + adaptor + "': cannot create its upstream '" + name +
                       "': " + e.what());
  }
}

} // namespace cuplug::pool
