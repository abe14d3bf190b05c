// cuGetProcAddress_v2, the one driver symbol the fake exports: hands out each entry point by
// its base name and the CUDA version asked for, as the real driver does.
#include "fake_state.hpp"

#include <cstring>

namespace fake {

const entry_table &entries() {
  static const entry_table *table = [] {
    auto *t = new entry_table;
    add_error_entries(*t);
    add_device_entries(*t);
    add_context_entries(*t);
    add_memory_entries(*t);
    add_memory_pool_entries(*t);
    add_copy_entries(*t);
    add_stream_event_entries(*t);
    add_module_launch_entries(*t);
    add_linker_entries(*t);
    add_array_entries(*t);
    add_graph_entries(*t);
    add_launch_ex_entries(*t);
    add_graphics_entries(*t);
    return t;
  }();
  return *table;
}

} // namespace fake

// As documented: CUDA_SUCCESS with a null pointer for unknown names or versions older than every
// form of the name; the newest form introduced at or before `cudaVersion` otherwise.
extern "C" __attribute__((visibility("default"))) CUresult
cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                    CUdriverProcAddressQueryResult *symbolStatus) {
  if (!symbol || !pfn)
    return CUDA_ERROR_INVALID_VALUE;
  constexpr cuuint64_t known =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~known) || cudaVersion > fake::driver_version())
    return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const fake::entry *best = nullptr;
  bool named = false;
  for (const auto &e : fake::entries()) {
    if (std::strcmp(e.name, symbol) != 0)
      continue;
    named = true;
    if (e.version <= cudaVersion && (!best || e.version > best->version))
      best = &e;
  }
  if (best)
    *pfn = best->function;
  if (symbolStatus)
    *symbolStatus = best    ? CU_GET_PROC_ADDRESS_SUCCESS
                    : named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_SUCCESS;
}
