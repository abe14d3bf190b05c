// The control API tests use to steer and inspect the fake (fake_cuda.h).
#include "fake_cuda.h"
#include "fake_state.hpp"

#include <algorithm>
#include <cstring>
#include <string>

using fake::alloc_kind;

extern "C" {

void fake_cuda_reset(void) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  fake::reset_all();
}

int fake_cuda_fail_next(const char *base_name, int code, int count) {
  if (!base_name)
    return -1;
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  return fake::set_fault(base_name, static_cast<CUresult>(code), count) ? 0 : -1;
}

void fake_cuda_clear_faults(void) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  fake::clear_faults();
}

unsigned long long fake_cuda_form_calls(const char *base_name, int version) {
  if (!base_name)
    return 0;
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  auto &calls = fake::state().form_calls;
  auto it = calls.find(std::string(base_name) + "@" + std::to_string(version));
  return it == calls.end() ? 0 : it->second;
}

unsigned long long fake_cuda_launch_count(void) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  return fake::state().launch_count;
}

void fake_cuda_clear_launches(void) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  fake::state().launches.clear();
  fake::state().launch_count = 0;
}

int fake_cuda_get_launch(unsigned back, char *name, size_t name_len, unsigned *grid,
                         unsigned *block, unsigned *shared_bytes, CUstream *stream, void *params,
                         size_t *params_size) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  const auto &launches = fake::state().launches;
  if (back >= launches.size())
    return -1;
  const fake::launch_record &r = launches[launches.size() - 1 - back];
  if (name && name_len) {
    size_t n = std::min(r.function.size(), name_len - 1);
    std::memcpy(name, r.function.data(), n);
    name[n] = '\0';
  }
  if (grid)
    std::copy(r.grid, r.grid + 3, grid);
  if (block)
    std::copy(r.block, r.block + 3, block);
  if (shared_bytes)
    *shared_bytes = r.shared_bytes;
  if (stream)
    *stream = r.stream;
  int result = 0;
  if (params_size) {
    size_t room = params ? *params_size : 0;
    if (params)
      std::memcpy(params, r.params.data(), std::min(room, r.params.size()));
    if (params && room < r.params.size())
      result = -2;
    *params_size = r.params.size();
  }
  return result;
}

int fake_cuda_last_launch(char *name, size_t name_len, unsigned *grid, unsigned *block,
                          unsigned *shared_bytes, CUstream *stream, void *params,
                          size_t *params_size) {
  return fake_cuda_get_launch(0, name, name_len, grid, block, shared_bytes, stream, params,
                              params_size);
}

size_t fake_cuda_live_allocations(void) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  size_t n = 0;
  for (const auto &[base, a] : fake::state().allocations)
    n += a.kind == alloc_kind::device || a.kind == alloc_kind::async ||
         a.kind == alloc_kind::managed;
  return n;
}

size_t fake_cuda_live_host_allocations(void) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  size_t n = 0;
  for (const auto &[base, a] : fake::state().allocations)
    n += a.kind == alloc_kind::host;
  return n;
}

size_t fake_cuda_device_bytes_in_use(int device) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  auto &s = fake::state();
  if (device < 0 || size_t(device) >= s.device_used.size())
    return 0;
  return s.device_used[device] + fake::pool_cache_bytes(device);
}

void fake_cuda_set_peer_access(int enabled) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  fake::state().peer_access = enabled != 0;
}

int fake_cuda_peer_enabled(CUcontext ctx, CUcontext peer) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  return fake::context_usable(ctx) && ctx->peers.count(peer) != 0 ? 1 : 0;
}

void fake_cuda_set_ipc_in_process(int enabled) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  fake::state().ipc_in_process = enabled != 0;
}

void fake_cuda_reuse_context_handles(int enabled) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  fake::state().reuse_context_handles = enabled != 0;
  if (!enabled)
    fake::state().reusable_contexts.clear();
}

size_t fake_cuda_take_undefined_behaviour(char *buffer, size_t size) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  auto reports = fake::take_undefined_behaviour();
  std::string text;
  for (const auto &r : reports)
    text += r + "\n";
  if (buffer && size) {
    size_t n = std::min(text.size(), size - 1);
    std::memcpy(buffer, text.data(), n);
    buffer[n] = '\0';
  }
  return reports.size();
}

int fake_cuda_context_alive(CUcontext ctx) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  return fake::context_usable(ctx) ? 1 : 0;
}

int fake_cuda_context_stack_depth(void) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  return static_cast<int>(fake::ctx_stack().size());
}

int fake_cuda_get_launch_attributes(unsigned back, unsigned *cluster, int *cooperative,
                                    int *priority) {
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  const auto &launches = fake::state().launches;
  if (back >= launches.size())
    return -1;
  const fake::launch_record &r = launches[launches.size() - 1 - back];
  if (cluster)
    std::copy(r.cluster, r.cluster + 3, cluster);
  if (cooperative)
    *cooperative = r.cooperative;
  if (priority)
    *priority = r.priority;
  return 0;
}

long fake_cuda_live_objects(const char *kind) {
  if (!kind)
    return -1;
  std::lock_guard<std::recursive_mutex> lock(fake::mutex());
  const auto &s = fake::state();
  const std::string k = kind;
  if (k == "array")
    return static_cast<long>(s.arrays.size());
  if (k == "texture")
    return static_cast<long>(s.textures.size());
  if (k == "surface")
    return static_cast<long>(s.surfaces.size());
  if (k == "graph") {
    long n = 0;
    for (CUgraph g : s.graphs)
      n += g->owned_by_node ? 0 : 1;
    return n;
  }
  if (k == "graph_exec")
    return static_cast<long>(s.graph_execs.size());
  return -1;
}

} // extern "C"
