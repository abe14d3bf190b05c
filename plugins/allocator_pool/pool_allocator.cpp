// The "pool" plugin: reads its options, creates its upstream through the registry.
#include "pool_allocator.hpp"

#include "make_upstream.hpp"

namespace cuplug {

pool_allocator::pool_allocator(const options &opts)
    : pool_allocator(pool::make_upstream(opts.get_string("upstream", "device"), "pool")) {
  if (opts.get_bool("trace", false))
    pool_.set_trace(true);
}

} // namespace cuplug

CUPLUG_PLUGIN(allocator, cuplug::pool_allocator, "pool",
              "caching pool with size bins over an upstream allocator (stream-ordered reuse)",
              CUPLUG_PLUGIN_VERSION)
