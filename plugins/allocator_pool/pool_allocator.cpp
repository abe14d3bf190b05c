// The "pool" plugin: reads its options and gets its upstream through the pool kit's make_upstream.
#include "pool_allocator.hpp"

#include <cuplug/plugin.hpp>
#include <cuplug/pool/make_upstream.hpp>
#include <cuplug/pool/stream_fences.hpp>

namespace cuplug::plugins {

pool_allocator::pool_allocator(const options &opts)
    : pool_allocator(pool::make_upstream(opts, "pool")) {
  if (opts.get_bool("trace", false))
    pool_.set_trace(true);
}

// make_upstream never returns null, so the upstream's kind can be read before the pool is made.
pool_allocator::pool_allocator(plugin_ptr<allocator> upstream)
    : kind_(upstream->kind()), pool_(upstream, pool::make_fences(kind_)) {}

} // namespace cuplug::plugins

CUPLUG_PLUGIN(allocator, cuplug::plugins::pool_allocator, "pool",
              "caching pool with size bins over an upstream allocator (stream-ordered reuse)",
              CUPLUG_PLUGIN_VERSION)
