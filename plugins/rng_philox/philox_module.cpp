// Loads the kernels embedded at build time (philox_image.cpp, generated from the fatbin) into
// each context that asks, keyed by the driver's unique context id.
#include "philox_module.hpp"

#include <cuplug/context_events.hpp>
#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace cuplug::philox {

// philox_image.cpp (generated): the fatbin nvcc made of philox_kernels.cu.
extern const unsigned char image[];
extern const std::size_t image_size;

namespace {

// cuCtxGetId (CUDA 12) is not in the core's table; found by name, it tells a new context from a
// destroyed one whose handle it was given. Without it the handle is the key.
using ctx_get_id_fn = CUresult (*)(CUcontext, unsigned long long *);

unsigned long long context_key(CUcontext ctx) {
  static const auto get_id = reinterpret_cast<ctx_get_id_fn>(driver_symbol("cuCtxGetId", 12000));
  unsigned long long id = 0;
  if (get_id != nullptr && get_id(ctx, &id) == CUDA_SUCCESS)
    return id;
  return reinterpret_cast<unsigned long long>(ctx);
}

std::mutex &modules_mutex() {
  static auto *m = new std::mutex(); // leaked: contexts may be destroyed during exit
  return *m;
}

std::map<unsigned long long, std::unique_ptr<loaded_module>> &modules() {
  static auto *m = new std::map<unsigned long long, std::unique_ptr<loaded_module>>();
  return *m;
}

// The host destroys `ctx` next (it is current): its module is unloaded now, and a new context
// that gets its handle (the key when the driver lacks cuCtxGetId) loads its own.
void drop_context(CUcontext ctx) noexcept {
  std::unique_ptr<loaded_module> gone;
  {
    std::lock_guard<std::mutex> lock(modules_mutex());
    auto it = modules().find(context_key(ctx));
    if (it == modules().end())
      return;
    gone = std::move(it->second);
    modules().erase(it);
  }
  try {
    if (gone->module != nullptr)
      (void)::cuplug::detail::entry(driver().cuModuleUnload, "cuModuleUnload")(gone->module);
  } catch (...) {
    // No driver entry: the module goes with its context.
  }
}

} // namespace

std::size_t loaded_module_count() {
  std::lock_guard<std::mutex> lock(modules_mutex());
  return modules().size();
}

const loaded_module &module_for_current_context() {
  CUcontext ctx = nullptr;
  CUPLUG_CALL(cuCtxGetCurrent, &ctx);
  if (ctx == nullptr)
    throw cuda_error("cuCtxGetCurrent", CUDA_ERROR_INVALID_CONTEXT,
                     "rng 'philox' needs a current CUDA context to launch its kernels");
  static const bool watching = (on_context_destroy(&drop_context), true);
  (void)watching;
  auto &modules = ::cuplug::philox::modules();
  const unsigned long long key = context_key(ctx);
  std::lock_guard<std::mutex> lock(modules_mutex());
  auto it = modules.find(key);
  if (it != modules.end())
    return *it->second;
  auto m = std::make_unique<loaded_module>();
  m->context = key;
  CUPLUG_CALL(cuModuleLoadData, &m->module, image);
  for (int i = 0; i < kernel_count; ++i)
    CUPLUG_CALL(cuModuleGetFunction, &m->kernels[i], m->module, kernel_names[i]);
  CUdevice dev = 0;
  CUPLUG_CALL(cuCtxGetDevice, &dev, nullptr);
  int sms = 0;
  CUPLUG_CALL(cuDeviceGetAttribute, &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  m->max_blocks = static_cast<unsigned>(sms > 0 ? sms : 1) * 8u;
  (void)image_size;
  return *modules.emplace(key, std::move(m)).first->second;
}

} // namespace cuplug::philox
