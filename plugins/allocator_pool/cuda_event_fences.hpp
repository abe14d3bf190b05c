// Stream fences for CUDA memory: recycled events, one context per event.
#pragma once

#include "stream_fences.hpp"

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <cuda.h>

#include <mutex>
#include <vector>

namespace cuplug::pool {

// A fence is an event recorded on the stream; the pool makes the taking stream wait on it
// (cuStreamWaitEvent) or, before giving a block back, synchronises on it. Events are created
// with CU_EVENT_DISABLE_TIMING on first need and kept for reuse, each tagged with its context,
// since an event may only be recorded on and waited for by streams of its own context.
class cuda_event_fences final : public stream_fences {
public:
  cuda_event_fences() = default;
  ~cuda_event_fences() override {
    // Best effort: events of contexts destroyed meanwhile are gone with them.
    for (slot *s : all_) {
      try {
        if (driver().cuEventDestroy)
          driver().cuEventDestroy(s->event);
      } catch (...) {
      }
      delete s;
    }
  }
  cuda_event_fences(const cuda_event_fences &) = delete;
  cuda_event_fences &operator=(const cuda_event_fences &) = delete;

  bool needs_fences() const noexcept override { return true; }

  std::uintptr_t domain() const noexcept override {
    CUcontext ctx = nullptr;
    try {
      if (const auto get = driver().cuCtxGetCurrent; get == nullptr || get(&ctx) != CUDA_SUCCESS)
        ctx = nullptr;
    } catch (...) {
      ctx = nullptr; // no driver: the upstream will say so
    }
    return reinterpret_cast<std::uintptr_t>(ctx);
  }

  // The per-thread default stream handle names a different stream in every thread.
  bool same_stream(CUstream a, CUstream b) const noexcept override {
    return a == b && a != CU_STREAM_PER_THREAD;
  }

  bool persistent(CUstream stream) const noexcept override {
    return stream == nullptr || stream == CU_STREAM_LEGACY;
  }

  fence_t record(CUstream stream, std::uintptr_t domain) override {
    slot *s = take(reinterpret_cast<CUcontext>(domain));
    try {
      CUPLUG_CALL(cuEventRecord, s->event, stream);
    } catch (...) {
      release(reinterpret_cast<fence_t>(s));
      throw;
    }
    return reinterpret_cast<fence_t>(s);
  }

  void wait(CUstream stream, fence_t f) override {
    CUPLUG_CALL(cuStreamWaitEvent, stream, reinterpret_cast<slot *>(f)->event, 0);
  }

  void synchronize(fence_t f) override {
    CUPLUG_CALL(cuEventSynchronize, reinterpret_cast<slot *>(f)->event);
  }

  void release(fence_t f) noexcept override {
    if (f == 0)
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(reinterpret_cast<slot *>(f));
  }

private:
  struct slot {
    CUevent event;
    CUcontext context;
  };

  slot *take(CUcontext ctx) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t i = free_.size(); i-- > 0;) {
        if (free_[i]->context == ctx) {
          slot *s = free_[i];
          free_[i] = free_.back();
          free_.pop_back();
          return s;
        }
      }
    }
    CUevent event = nullptr;
    CUPLUG_CALL(cuEventCreate, &event, CU_EVENT_DISABLE_TIMING);
    slot *s = new slot{event, ctx};
    std::lock_guard<std::mutex> lock(mutex_);
    all_.push_back(s);
    return s;
  }

  std::mutex mutex_;
  std::vector<slot *> free_;
  std::vector<slot *> all_;
};

} // namespace cuplug::pool
