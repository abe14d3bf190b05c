// How the pool orders a block's reuse across streams: a fence recorded on the stream that freed
// it, waited on by the stream that takes it. No driver calls here (see cuda_event_fences.hpp).
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/plugin_abi.hpp>

#include <cuda.h>

#include <cstdint>
#include <memory>

namespace cuplug::pool {

using fence_t = std::uintptr_t; // an opaque fence handle; 0 = none

// Implementations are thread-safe.
class CUPLUG_API stream_fences {
public:
  virtual ~stream_fences() = default;

  // False when the memory needs no ordering between streams (plain host memory): the pool then
  // hands any held block to any stream and never calls the functions below but domain().
  virtual bool needs_fences() const noexcept = 0;
  // Blocks are never shared between domains (for CUDA memory: the calling thread's current
  // context, since stream handles and events belong to one context). Called on every
  // allocate / deallocate, so it must be cheap.
  virtual std::uintptr_t domain() const noexcept = 0;
  // Whether work on `a` and on `b` runs in one order, so a block freed on `a` may be handed to
  // `b` without a fence.
  virtual bool same_stream(CUstream a, CUstream b) const noexcept { return a == b; }
  // Streams whose handle stays valid for the life of the process (the legacy default stream). A
  // block freed on one gets its fence lazily, when another stream takes it: a fence recorded
  // then is also after the free. Other streams may be destroyed while the pool holds the block,
  // so they are fenced when the block is freed.
  virtual bool persistent(CUstream stream) const noexcept = 0;

  // A fence after all work enqueued so far on `stream`, in context `domain` (the current one).
  virtual fence_t record(CUstream stream, std::uintptr_t domain) = 0;
  // Makes work enqueued later on `stream` wait for `f`, without blocking the host.
  virtual void wait(CUstream stream, fence_t f) = 0;
  // Blocks the calling thread until `f` is reached.
  virtual void synchronize(fence_t f) = 0;
  // Gives `f` back for reuse; the handle is invalid afterwards.
  virtual void release(fence_t f) noexcept = 0;
};

// Host memory: nothing to order.
class CUPLUG_API unordered_fences final : public stream_fences {
public:
  bool needs_fences() const noexcept override { return false; }
  std::uintptr_t domain() const noexcept override { return 0; }
  bool persistent(CUstream) const noexcept override { return true; }
  fence_t record(CUstream, std::uintptr_t) override { return 0; }
  void wait(CUstream, fence_t) override {}
  void synchronize(fence_t) override {}
  void release(fence_t) noexcept override {}
};

// The fences memory of `kind` needs: none for plain host memory, CUDA events for the rest
// (device, managed and page-locked memory is used by streams).
CUPLUG_API std::shared_ptr<stream_fences> make_fences(memory_kind kind);

} // namespace cuplug::pool
