// The fake driver's process-wide state: locking, fault injection, context stacks, the address
// space (fake device addresses backed by host memory) and the allocation map.
#include "fake_state.hpp"
#include "module_image.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fake {

state_t &state() {
  // Never destroyed: other libraries' destructors call the driver during process exit.
  static state_t *s = new state_t;
  return *s;
}

std::recursive_mutex &mutex() {
  static std::recursive_mutex *m = new std::recursive_mutex;
  return *m;
}

// Fault injection ------------------------------------------------------------------------------

namespace {
struct fault {
  CUresult code;
  int remaining;
};
std::map<std::string, fault> &faults() {
  static auto *f = new std::map<std::string, fault>;
  return *f;
}
} // namespace

bool set_fault(const std::string &name, CUresult code, int count) {
  const auto &table = entries();
  bool known =
      std::any_of(table.begin(), table.end(), [&](const entry &e) { return name == e.name; });
  if (!known)
    return false;
  if (count <= 0)
    faults().erase(name);
  else
    faults()[name] = fault{code, count};
  return true;
}

void clear_faults() { faults().clear(); }

// Undefined behaviour reports -------------------------------------------------------------------

namespace {
thread_local const char *t_call = "";
std::vector<std::string> &reports() {
  static auto *r = new std::vector<std::string>;
  return *r;
}
} // namespace

CUresult undefined_behaviour(CUresult code, const std::string &what) {
  auto &r = reports();
  if (r.size() < 100)
    r.push_back(std::string(t_call) + ": " + what +
                " (the real driver's behaviour is undefined: it may crash)");
  return code;
}

std::vector<std::string> take_undefined_behaviour() {
  std::vector<std::string> out;
  out.swap(reports());
  return out;
}

int driver_version() {
  static const int version = [] {
    const char *env = std::getenv("FAKE_CUDA_DRIVER_VERSION");
    if (!env || !*env)
      return 13000;
    char *end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 12000 || v > 13000 || v % 10 != 0) {
      std::fprintf(stderr,
                   "fake CUDA driver: FAKE_CUDA_DRIVER_VERSION=%s is not a CUDA version from "
                   "12000 to 13000 as cuDriverGetVersion spells it (12040 for 12.4)\n",
                   env);
      std::abort();
    }
    return static_cast<int>(v);
  }();
  return version;
}

int newest_ptx_version() {
  // The PTX ISA release history: 8.0 came with CUDA 12.0, ... 8.5 with 12.5 (12.6 kept it), 8.6
  // with 12.7, 8.7 with 12.8, 8.8 with 12.9, 9.0 with 13.0.
  static constexpr int ptx_by_minor[] = {80, 81, 82, 83, 84, 85, 85, 86, 87, 88};
  const int v = driver_version();
  return v >= 13000 ? 90 : ptx_by_minor[(v - 12000) / 10];
}

void count_form_call(const char *name, int version) {
  ++state().form_calls[std::string(name) + "@" + std::to_string(version)];
}

CUresult begin_call(const char *name, bool needs_init) {
  t_call = name;
  auto &f = faults();
  if (!f.empty()) {
    auto it = f.find(name);
    if (it != f.end()) {
      CUresult code = it->second.code;
      if (--it->second.remaining <= 0)
        f.erase(it);
      return code;
    }
  }
  if (needs_init && !state().initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  return CUDA_SUCCESS;
}

// Contexts -------------------------------------------------------------------------------------

namespace {
struct thread_stack {
  uint64_t epoch = 0;
  std::vector<CUcontext> stack;
};
thread_local thread_stack t_stack;
} // namespace

std::vector<CUcontext> &ctx_stack() {
  if (t_stack.epoch != state().epoch) {
    t_stack.stack.clear();
    t_stack.epoch = state().epoch;
  }
  return t_stack.stack;
}

bool is_context(CUcontext ctx) { return ctx != nullptr && state().contexts.count(ctx) != 0; }

bool context_usable(CUcontext ctx) { return is_context(ctx) && ctx->alive; }

CUresult check_context(CUcontext ctx) {
  if (context_usable(ctx))
    return CUDA_SUCCESS;
  if (ctx == nullptr || is_context(ctx))
    return CUDA_ERROR_INVALID_CONTEXT; // null, or released
  return undefined_behaviour(CUDA_ERROR_INVALID_CONTEXT,
                             "context " + std::to_string(reinterpret_cast<uintptr_t>(ctx)) +
                                 " was destroyed or never created");
}

bool valid_device(CUdevice dev) { return dev >= 0 && dev < state().device_count; }

CUresult current_context(CUcontext *out) {
  auto &stack = ctx_stack();
  if (stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext top = stack.back();
  if (!top->alive)
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *out = top;
  return CUDA_SUCCESS;
}

CUresult stream_context(CUstream stream, CUcontext *out) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
    return current_context(out);
  FAKE_CHECK(check_handle(state().streams, stream, "stream"));
  if (!stream->ctx->alive)
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  // Work the fake does not capture (only launches, 1D async copies and memsets are) must not run
  // at once while the stream captures: refused as the driver refuses what it cannot capture.
  if (stream->capture) {
    stream->capture_invalidated = true; // as the driver does: the capture cannot be ended now
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  *out = stream->ctx;
  return CUDA_SUCCESS;
}

// Address space --------------------------------------------------------------------------------

namespace {
// A PROT_NONE reservation per device: fake device addresses are real, unique virtual addresses
// that fault when the host dereferences them, as device pointers do.
struct arena {
  uintptr_t base = 0;
  size_t size = 0;
  std::map<uintptr_t, size_t> free; // start -> length
};
std::map<int, arena> &arenas() {
  static auto *a = new std::map<int, arena>;
  return *a;
}

arena &arena_for(int device) {
  auto &all = arenas();
  auto it = all.find(device);
  if (it != all.end())
    return it->second;
  arena a;
  // Room for the device's memory plus module globals and IPC mappings; smaller if the address
  // space is limited (ulimit -v).
  for (size_t size = device_total_memory + (size_t(16) << 30); size >= (size_t(1) << 30);
       size /= 2) {
    void *p = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      a.base = reinterpret_cast<uintptr_t>(p);
      a.size = size;
      break;
    }
  }
  if (a.size)
    a.free[a.base] = a.size;
  return all[device] = a;
}

size_t round_up(size_t n, size_t align) { return (n + align - 1) / align * align; }
} // namespace

CUdeviceptr reserve_device_range(int device, size_t bytes) {
  arena &a = arena_for(device);
  size_t need = round_up(std::max<size_t>(bytes, 1), device_alignment);
  for (auto it = a.free.begin(); it != a.free.end(); ++it) {
    if (it->second >= need) {
      uintptr_t start = it->first;
      size_t left = it->second - need;
      a.free.erase(it);
      if (left)
        a.free[start + need] = left;
      return start;
    }
  }
  return 0;
}

void release_device_range(CUdeviceptr base, size_t bytes) {
  for (auto &[device, a] : arenas()) {
    if (base < a.base || base >= a.base + a.size)
      continue;
    size_t len = round_up(std::max<size_t>(bytes, 1), device_alignment);
    uintptr_t start = base;
    auto next = a.free.lower_bound(start);
    if (next != a.free.end() && start + len == next->first) {
      len += next->second;
      next = a.free.erase(next);
    }
    if (next != a.free.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        prev->second += len;
        return;
      }
    }
    a.free[start] = len;
    return;
  }
}

bool in_device_reservation(uintptr_t address) {
  for (auto &[device, a] : arenas())
    if (address >= a.base && address < a.base + a.size)
      return true;
  return false;
}

// Allocations ----------------------------------------------------------------------------------

allocation *find_allocation(CUdeviceptr p) {
  auto &all = state().allocations;
  auto it = all.upper_bound(p);
  if (it == all.begin())
    return nullptr;
  --it;
  if (p >= it->second.base && p < it->second.base + it->second.size)
    return &it->second;
  return nullptr;
}

CUresult device_range(CUdeviceptr p, size_t bytes, unsigned char **host) {
  allocation *a = find_allocation(p);
  if (!a)
    return CUDA_ERROR_INVALID_VALUE;
  size_t offset = p - a->base;
  if (bytes > a->size - offset)
    return CUDA_ERROR_INVALID_VALUE;
  *host = a->bytes() + offset;
  return CUDA_SUCCESS;
}

CUresult unified_range(CUdeviceptr p, size_t bytes, unsigned char **host) {
  if (find_allocation(p))
    return device_range(p, bytes, host);
  if (p == 0 || in_device_reservation(p))
    return CUDA_ERROR_INVALID_VALUE;
  *host = reinterpret_cast<unsigned char *>(p);
  return CUDA_SUCCESS;
}

CUresult host_range(const void *p, size_t bytes) {
  if (bytes == 0)
    return CUDA_SUCCESS;
  auto address = reinterpret_cast<uintptr_t>(p);
  if (p == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  if (in_device_reservation(address))
    return undefined_behaviour(CUDA_ERROR_INVALID_VALUE, "device address " +
                                                             std::to_string(address) +
                                                             " passed as host memory");
  return CUDA_SUCCESS;
}

allocation &add_allocation(allocation a) {
  auto &s = state();
  a.id = s.next_id++;
  if (a.accounted && a.device >= 0 && size_t(a.device) < s.device_used.size())
    s.device_used[a.device] += a.accounted;
  CUdeviceptr base = a.base;
  return s.allocations[base] = std::move(a);
}

void remove_allocation(CUdeviceptr base) {
  auto &s = state();
  auto it = s.allocations.find(base);
  if (it == s.allocations.end())
    return;
  allocation &a = it->second;
  if (a.accounted && a.device >= 0 && size_t(a.device) < s.device_used.size())
    s.device_used[a.device] -= a.accounted;
  bool fake_address = a.kind == alloc_kind::device || a.kind == alloc_kind::async ||
                      a.kind == alloc_kind::module_global || a.kind == alloc_kind::ipc_mapping;
  size_t size = a.size;
  s.allocations.erase(it);
  if (fake_address)
    release_device_range(base, size);
}

std::shared_ptr<unsigned char> allocate_host(size_t bytes) {
  size_t size = round_up(std::max<size_t>(bytes, 1), page_size);
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED)
    return nullptr;
  return std::shared_ptr<unsigned char>(static_cast<unsigned char *>(p),
                                        [size](unsigned char *q) { munmap(q, size); });
}

CUresult allocate_device(int device, size_t bytes, alloc_kind kind, CUcontext ctx,
                         CUdeviceptr *out) {
  auto &s = state();
  size_t charged = round_up(bytes, device_alignment);
  size_t cached = pool_cache_bytes(device);
  if (charged > device_total_memory - std::min(device_total_memory, s.device_used[device] + cached))
    return CUDA_ERROR_OUT_OF_MEMORY;
  CUdeviceptr base = reserve_device_range(device, bytes);
  if (!base)
    return CUDA_ERROR_OUT_OF_MEMORY;
  auto backing = allocate_host(bytes);
  if (!backing) {
    release_device_range(base, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  allocation a;
  a.base = base;
  a.size = bytes;
  a.backing = std::move(backing);
  a.kind = kind;
  a.ctx = ctx;
  a.device = device;
  a.accounted = charged;
  add_allocation(std::move(a));
  *out = base;
  return CUDA_SUCCESS;
}

void release_context_resources(CUcontext ctx) {
  auto &s = state();
  std::vector<CUdeviceptr> doomed;
  for (auto &[base, a] : s.allocations)
    if (a.ctx == ctx)
      doomed.push_back(base);
  for (CUdeviceptr base : doomed)
    remove_allocation(base);
  for (auto it = s.modules.begin(); it != s.modules.end();) {
    CUmodule m = *it;
    if (m->ctx != ctx) {
      ++it;
      continue;
    }
    m->alive = false;
    for (auto &[name, f] : m->functions)
      s.functions.erase(f);
    it = s.modules.erase(it);
  }
  for (auto it = s.streams.begin(); it != s.streams.end();)
    it = (*it)->ctx == ctx ? s.streams.erase(it) : std::next(it);
  for (auto it = s.events.begin(); it != s.events.end();)
    it = (*it)->ctx == ctx ? s.events.erase(it) : std::next(it);
  for (auto it = s.links.begin(); it != s.links.end();)
    it = (*it)->ctx == ctx ? s.links.erase(it) : std::next(it);
  release_context_arrays(ctx);
  for (CUcontext other : s.contexts)
    other->peers.erase(ctx);
  ctx->peers.clear();
}

size_t pool_cache_bytes(int device) {
  size_t cached = 0;
  for (CUmemoryPool p : state().pools)
    if (p->pool.device == device && !p->pool.managed)
      cached += p->pool.cached;
  return cached;
}

void trim_pools_on_sync() {
  for (CUmemoryPool p : state().pools) {
    memory_pool &pool = p->pool;
    if (pool.reserved() > pool.release_threshold)
      pool.cached = pool.release_threshold > pool.used ? pool.release_threshold - pool.used : 0;
  }
}

void record_launch(launch_record record) {
  auto &s = state();
  if (s.launches.size() == launch_history)
    s.launches.erase(s.launches.begin());
  s.launches.push_back(std::move(record));
  ++s.launch_count;
}

void reset_all() {
  auto &s = state();
  for (CUcontext c : s.contexts)
    c->alive = false;
  for (CUmodule m : s.modules)
    m->alive = false;
  for (CUmemoryPool p : s.pools)
    p->pool.alive = false;
  s.contexts.clear();
  s.streams.clear();
  s.events.clear();
  s.modules.clear();
  s.functions.clear();
  s.pools.clear();
  s.links.clear();
  s.primary.clear();
  s.default_pools.clear();
  s.arrays.clear();
  s.textures.clear();
  s.surfaces.clear();
  s.next_sampler = 1;
  s.graphs.clear();
  s.graph_execs.clear();
  s.next_capture_id = 1;
  s.allocations.clear();
  s.device_used.clear();
  s.physical.clear();
  for (auto &[device, a] : arenas()) {
    a.free.clear();
    if (a.size)
      a.free[a.base] = a.size;
  }
  s.launches.clear();
  s.launch_count = 0;
  s.form_calls.clear();
  s.profiler_running = false;
  s.ipc_in_process = false;
  s.peer_access = true;
  s.reuse_context_handles = false;
  s.reusable_contexts.clear();
  take_undefined_behaviour();
  s.initialized = false;
  ++s.epoch;
  clear_faults();
}

} // namespace fake
