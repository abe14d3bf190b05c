// Allocator objects per context (see context_allocators.hpp).
#include "memory/context_allocators.hpp"

#include <cuplug/config.hpp>

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace cuplug::python {

namespace {

// Pools of destroyed contexts: kept, never destroyed (see context_allocators).
void abandon(plugin_ptr<allocator> alloc) {
  static auto *graveyard = new std::vector<plugin_ptr<allocator>>(); // leaked: exit order
  graveyard->push_back(std::move(alloc));
}

} // namespace

void context_allocators::drop(entry &e) noexcept {
  if (!e.alloc)
    return;
  if (!e.ctx || !e.ctx->valid()) {
    abandon(std::move(e.alloc));
    return;
  }
  try {
    scoped_activation active(e.ctx);
    if (e.alloc->can_free_held())
      e.alloc->free_held();
    e.alloc.reset();
  } catch (...) {
    if (e.alloc)
      abandon(std::move(e.alloc));
  }
}

plugin_ptr<allocator> context_allocators::get(const context_ptr &ctx, const void *key,
                                              const factory &make) {
  entry &e = entries_[{ctx->handle(), key}];
  // The entry's own context still valid: the handle still names that context, whichever
  // Context object (each retain_primary_context() makes one) asks.
  if (!e.alloc || (e.ctx != ctx && !e.ctx->valid())) {
    drop(e); // a new context that got a destroyed one's handle: that one's instance goes first
    e.alloc = make();
    e.ctx = ctx;
  }
  return e.alloc;
}

// The release functions take their entries out of the map before dropping them: an entry may
// hold the last reference to its context, whose destruction calls release_context() (the
// context-destroy listeners) on this same map, which must not be in the middle of a loop.
std::size_t context_allocators::release() noexcept {
  auto taken = std::move(entries_);
  entries_.clear();
  std::size_t released = 0;
  for (auto &[k, e] : taken) {
    try {
      if (e.alloc && e.ctx && e.ctx->valid())
        released += e.alloc->stats().bytes_held;
    } catch (...) {
    }
    drop(e);
  }
  return released; // `taken` (and the contexts only it held) goes here
}

void context_allocators::release_if(const std::function<bool(const key_type &)> &which) noexcept {
  std::vector<entry> taken;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (which(it->first)) {
      taken.push_back(std::move(it->second));
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  for (entry &e : taken)
    drop(e);
}

std::vector<context_allocators::instance> context_allocators::instances() const {
  std::vector<instance> out;
  for (const auto &[k, e] : entries_)
    if (e.alloc && e.ctx && e.ctx->valid())
      out.push_back({e.ctx->device(), static_cast<const allocator *>(k.second), e.alloc});
  return out;
}

void context_allocators::release(const void *key) noexcept {
  release_if([key](const key_type &k) { return k.second == key; });
}

void context_allocators::release_context(CUcontext handle) noexcept {
  release_if([handle](const key_type &k) { return k.first == handle; });
}

namespace {

context_allocators &clones() {
  static auto *c = new context_allocators(); // leaked: exit order
  return *c;
}

// The context each selected object serves itself (its "home"): the first one it was used in.
// Weak: a selected object that went away (reset_backends) takes its clones with it, so a new one
// at the same address starts afresh.
struct home {
  std::weak_ptr<allocator> who;
  CUcontext ctx;
  CUdevice device; // ctx's
};
std::unordered_map<const allocator *, home> &homes() {
  static auto *h = new std::unordered_map<const allocator *, home>();
  return *h;
}

} // namespace

plugin_ptr<allocator> per_context(const context_ptr &ctx, const plugin_ptr<allocator> &selected) {
  if (!ctx || !selected)
    return selected;
  // The common case, one context, is one hash look-up.
  auto it = homes().find(selected.get());
  if (it == homes().end() || it->second.who.expired()) {
    if (it != homes().end())
      clones().release(selected.get());
    homes()[selected.get()] = home{selected, ctx->handle(), ctx->device()};
    return selected;
  }
  if (it->second.ctx == ctx->handle() || !selected->can_free_held())
    return selected;
  const std::string name = selected->backend_name();
  return clones().get(ctx, selected.get(), [&name] {
    return registry::instance().create<allocator>(
        plugin_kind::allocator, name,
        config::instance().plugin_options(plugin_kind::allocator, name));
  });
}

void release_per_context(CUcontext handle) noexcept {
  clones().release_context(handle);
  auto &h = homes();
  for (auto it = h.begin(); it != h.end();) {
    if (it->second.ctx != handle) {
      ++it;
      continue;
    }
    if (plugin_ptr<allocator> selected = it->second.who.lock()) {
      try {
        if (selected->can_free_held())
          selected->free_held(); // the dying context is current (context listeners)
      } catch (...) {
      }
    }
    it = h.erase(it);
  }
}

std::vector<context_allocators::instance> per_context_instances() {
  std::vector<context_allocators::instance> out;
  for (const auto &[key, h] : homes())
    if (plugin_ptr<allocator> selected = h.who.lock())
      out.push_back({h.device, key, std::move(selected)});
  std::sort(out.begin(), out.end(),
            [](const auto &a, const auto &b) { return a.device < b.device; });
  for (auto &clone : clones().instances())
    out.push_back(std::move(clone));
  return out;
}

std::size_t release_per_context() noexcept {
  homes().clear();
  return clones().release();
}

} // namespace cuplug::python
