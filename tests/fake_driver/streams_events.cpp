// Streams and events. Work runs when it is issued, so streams are always idle and recorded
// events complete at once; events keep a monotonic timestamp for cuEventElapsedTime.
#include "fake_state.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace fake {
namespace {

// Stream priorities of a Hopper GPU: 0 is the lowest, -5 the highest.
constexpr int least_priority = 0;
constexpr int greatest_priority = -5;

bool is_special_stream(CUstream s) {
  return s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

CUresult create_stream(CUstream *phStream, unsigned flags, int priority) {
  if (!phStream)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  if (flags & ~unsigned(CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  auto *s = new CUstream_st;
  s->ctx = ctx;
  s->flags = flags;
  s->priority = std::clamp(priority, greatest_priority, least_priority);
  state().streams.insert(s);
  *phStream = s;
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  FAKE_API(cuStreamCreate);
  return create_stream(phStream, Flags, least_priority);
}

CUresult fake_cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority) {
  FAKE_API(cuStreamCreateWithPriority);
  return create_stream(phStream, flags, priority);
}

CUresult fake_cuStreamDestroy(CUstream hStream) {
  FAKE_API(cuStreamDestroy);
  FAKE_CHECK(check_handle(state().streams, hStream, "stream"));
  state().streams.erase(hStream);
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamSynchronize(CUstream hStream) {
  FAKE_API(cuStreamSynchronize);
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  trim_pools_on_sync();
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamQuery(CUstream hStream) {
  FAKE_API(cuStreamQuery);
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  return CUDA_SUCCESS;
}

bool is_event(CUevent e) { return e && state().events.count(e) != 0; }

CUresult fake_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  FAKE_API(cuStreamWaitEvent);
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  FAKE_CHECK(check_handle(state().events, hEvent, "event"));
  if (Flags & ~unsigned(CU_EVENT_WAIT_EXTERNAL))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length,
                                     unsigned int flags) {
  FAKE_API(cuStreamAttachMemAsync);
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
    return CUDA_ERROR_INVALID_VALUE;
  if (flags == CU_MEM_ATTACH_SINGLE && is_special_stream(hStream))
    return CUDA_ERROR_INVALID_VALUE;
  allocation *a = find_allocation(dptr);
  if (!a || a->kind != alloc_kind::managed || a->base != dptr)
    return CUDA_ERROR_INVALID_VALUE;
  if (length != 0 && length != a->size)
    return CUDA_ERROR_INVALID_VALUE;
  a->flags = flags;
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamGetPriority(CUstream hStream, int *priority) {
  FAKE_API(cuStreamGetPriority);
  if (!priority)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  *priority = is_special_stream(hStream) ? least_priority : hStream->priority;
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamGetFlags(CUstream hStream, unsigned int *flags) {
  FAKE_API(cuStreamGetFlags);
  if (!flags)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  *flags = is_special_stream(hStream) ? 0 : hStream->flags;
  return CUDA_SUCCESS;
}

// Events ---------------------------------------------------------------------------------------

// An event opened from an IPC handle shares its source's recorded state.
CUevent root(CUevent e) { return e->source && is_event(e->source) ? e->source : e; }

CUresult fake_cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  FAKE_API(cuEventCreate);
  if (!phEvent)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  constexpr unsigned known =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (Flags & ~known)
    return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_VALUE;
  auto *e = new CUevent_st;
  e->ctx = ctx;
  e->flags = Flags;
  e->id = state().next_id++;
  state().events.insert(e);
  *phEvent = e;
  return CUDA_SUCCESS;
}

CUresult fake_cuEventDestroy(CUevent hEvent) {
  FAKE_API(cuEventDestroy);
  FAKE_CHECK(check_handle(state().events, hEvent, "event"));
  state().events.erase(hEvent);
  return CUDA_SUCCESS;
}

CUresult fake_cuEventRecord(CUevent hEvent, CUstream hStream) {
  FAKE_API(cuEventRecord);
  FAKE_CHECK(check_handle(state().events, hEvent, "event"));
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  if (ctx != hEvent->ctx)
    return CUDA_ERROR_INVALID_HANDLE;
  CUevent e = root(hEvent);
  e->recorded = true;
  e->when = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}

CUresult fake_cuEventSynchronize(CUevent hEvent) {
  FAKE_API(cuEventSynchronize);
  FAKE_CHECK(check_handle(state().events, hEvent, "event"));
  trim_pools_on_sync();
  return CUDA_SUCCESS;
}

CUresult fake_cuEventQuery(CUevent hEvent) {
  FAKE_API(cuEventQuery);
  FAKE_CHECK(check_handle(state().events, hEvent, "event"));
  return CUDA_SUCCESS;
}

CUresult fake_cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  FAKE_API(cuEventElapsedTime);
  if (!pMilliseconds)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_handle(state().events, hStart, "event"));
  FAKE_CHECK(check_handle(state().events, hEnd, "event"));
  if ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING)
    return CUDA_ERROR_INVALID_HANDLE;
  CUevent start = root(hStart), end = root(hEnd);
  if (!start->recorded || !end->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  std::chrono::duration<float, std::milli> ms = end->when - start->when;
  *pMilliseconds = ms.count();
  return CUDA_SUCCESS;
}

// IPC event handles (opened within this process) ----------------------------------------------

constexpr char ipc_event_magic[16] = "fakecuda-ipcevt";

struct ipc_event_payload {
  char magic[16];
  long long pid;
  unsigned long long id;
};
static_assert(sizeof(ipc_event_payload) <= sizeof(CUipcEventHandle));

CUresult fake_cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event) {
  FAKE_API(cuIpcGetEventHandle);
  if (!pHandle)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_handle(state().events, event, "event"));
  if (!(event->flags & CU_EVENT_INTERPROCESS))
    return CUDA_ERROR_INVALID_HANDLE;
  ipc_event_payload payload{};
  std::memcpy(payload.magic, ipc_event_magic, sizeof payload.magic);
  payload.pid = getpid();
  payload.id = root(event)->id;
  std::memset(pHandle, 0, sizeof *pHandle);
  std::memcpy(pHandle->reserved, &payload, sizeof payload);
  return CUDA_SUCCESS;
}

CUresult fake_cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle) {
  FAKE_API(cuIpcOpenEventHandle);
  if (!phEvent)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  ipc_event_payload payload;
  std::memcpy(&payload, handle.reserved, sizeof payload);
  if (std::memcmp(payload.magic, ipc_event_magic, sizeof payload.magic) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (payload.pid == getpid() && !state().ipc_in_process)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (payload.pid != getpid())
    return CUDA_ERROR_INVALID_HANDLE;
  for (CUevent source : state().events) {
    if (source->id != payload.id)
      continue;
    auto *e = new CUevent_st;
    e->ctx = ctx;
    e->flags = CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    e->id = state().next_id++;
    e->source = source;
    state().events.insert(e);
    *phEvent = e;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_HANDLE;
}

} // namespace

void add_stream_event_entries(entry_table &t) {
  FAKE_REGISTER(t, cuStreamCreate);
  FAKE_REGISTER(t, cuStreamCreateWithPriority);
  FAKE_REGISTER(t, cuStreamDestroy);
  FAKE_REGISTER(t, cuStreamSynchronize);
  FAKE_REGISTER(t, cuStreamQuery);
  FAKE_REGISTER(t, cuStreamWaitEvent);
  FAKE_REGISTER(t, cuStreamAttachMemAsync);
  FAKE_REGISTER(t, cuStreamGetPriority);
  FAKE_REGISTER(t, cuStreamGetFlags);
  FAKE_REGISTER(t, cuEventCreate);
  FAKE_REGISTER(t, cuEventDestroy);
  FAKE_REGISTER(t, cuEventRecord);
  FAKE_REGISTER(t, cuEventSynchronize);
  FAKE_REGISTER(t, cuEventQuery);
  FAKE_REGISTER(t, cuEventElapsedTime);
  FAKE_REGISTER(t, cuIpcGetEventHandle);
  FAKE_REGISTER(t, cuIpcOpenEventHandle);
}

} // namespace fake
