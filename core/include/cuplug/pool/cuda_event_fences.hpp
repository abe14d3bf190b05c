// Stream fences for CUDA memory: recycled events, one context per event.
#pragma once

#include <cuplug/plugin_abi.hpp>
#include <cuplug/pool/stream_fences.hpp>

#include <cuda.h>

#include <mutex>
#include <vector>

namespace cuplug::pool {

// A fence is an event recorded on the stream; the pool makes the taking stream wait on it
// (cuStreamWaitEvent) or, before giving a block back, synchronises on it. Events are created
// with CU_EVENT_DISABLE_TIMING on first need and kept for reuse, each tagged with its context,
// since an event may only be recorded on and waited for by streams of its own context. Driver
// failures throw cuda_error.
class CUPLUG_API cuda_event_fences final : public stream_fences {
public:
  cuda_event_fences() = default;
  // Destroys every event, best effort: events of contexts destroyed meanwhile went with them.
  ~cuda_event_fences() override;
  cuda_event_fences(const cuda_event_fences &) = delete;
  cuda_event_fences &operator=(const cuda_event_fences &) = delete;

  bool needs_fences() const noexcept override { return true; }
  // The calling thread's current context; 0 when there is none or no driver.
  std::uintptr_t domain() const noexcept override;
  // The per-thread default stream handle names a different stream in every thread.
  bool same_stream(CUstream a, CUstream b) const noexcept override {
    return a == b && a != CU_STREAM_PER_THREAD;
  }
  bool persistent(CUstream stream) const noexcept override {
    return stream == nullptr || stream == CU_STREAM_LEGACY;
  }
  fence_t record(CUstream stream, std::uintptr_t domain) override;
  void wait(CUstream stream, fence_t f) override;
  void synchronize(fence_t f) override;
  void release(fence_t f) noexcept override;

private:
  struct slot {
    CUevent event;
    CUcontext context;
  };
  slot *take(CUcontext ctx);

  std::mutex mutex_;
  std::vector<slot *> free_;
  std::vector<slot *> all_;
};

} // namespace cuplug::pool
