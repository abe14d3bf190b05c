// How registry::create_adaptor hands its upstream object to pool::make_upstream, through the
// plugin's constructor, without changing the plugin ABI's create(options) entry point.
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/registry.hpp>

// Not installed: registry.cpp offers, pool/make_upstream.cpp takes.

namespace cuplug::detail {

// While alive, `object` is on offer to the first make_upstream on this thread; every creation by
// the registry installs its own offer (an empty one for plain create()), so an adaptor made
// inside another plugin's constructor never takes an object meant for its maker. Restores the
// previous offer when destroyed.
class upstream_offer {
public:
  explicit upstream_offer(plugin_ptr<allocator> object) noexcept;
  ~upstream_offer();
  upstream_offer(const upstream_offer &) = delete;
  upstream_offer &operator=(const upstream_offer &) = delete;
  // Whether make_upstream took the object.
  bool taken() const noexcept { return mine_.taken; }

  struct slot {
    plugin_ptr<allocator> object;
    bool taken = false;
  };

private:
  slot mine_;
  slot *previous_;
};

// The object on offer on this thread, handed out once; null when there is none.
plugin_ptr<allocator> take_offered_upstream() noexcept;

} // namespace cuplug::detail
