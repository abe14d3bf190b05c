// CUDA-event fences for the pool kit, and the choice of fences by memory kind.
#include <cuplug/pool/cuda_event_fences.hpp>

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

namespace cuplug::pool {

std::shared_ptr<stream_fences> make_fences(memory_kind kind) {
  if (kind == memory_kind::host)
    return std::make_shared<unordered_fences>();
  return std::make_shared<cuda_event_fences>();
}

cuda_event_fences::~cuda_event_fences() {
  for (slot *s : all_) {
    try {
      if (driver().cuEventDestroy)
        driver().cuEventDestroy(s->event);
    } catch (...) {
    }
    delete s;
  }
}

std::uintptr_t cuda_event_fences::domain() const noexcept {
  CUcontext ctx = nullptr;
  try {
    if (const auto get = driver().cuCtxGetCurrent; get == nullptr || get(&ctx) != CUDA_SUCCESS)
      ctx = nullptr;
  } catch (...) {
    ctx = nullptr; // no driver: the upstream will say so
  }
  return reinterpret_cast<std::uintptr_t>(ctx);
}

fence_t cuda_event_fences::record(CUstream stream, std::uintptr_t domain) {
  slot *s = take(reinterpret_cast<CUcontext>(domain));
  try {
    CUPLUG_CALL(cuEventRecord, s->event, stream);
  } catch (...) {
    release(reinterpret_cast<fence_t>(s));
    throw;
  }
  return reinterpret_cast<fence_t>(s);
}

void cuda_event_fences::wait(CUstream stream, fence_t f) {
  CUPLUG_CALL(cuStreamWaitEvent, stream, reinterpret_cast<slot *>(f)->event, 0);
}

void cuda_event_fences::synchronize(fence_t f) {
  CUPLUG_CALL(cuEventSynchronize, reinterpret_cast<slot *>(f)->event);
}

void cuda_event_fences::release(fence_t f) noexcept {
  if (f == 0)
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(reinterpret_cast<slot *>(f));
}

cuda_event_fences::slot *cuda_event_fences::take(CUcontext ctx) {
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

} // namespace cuplug::pool
