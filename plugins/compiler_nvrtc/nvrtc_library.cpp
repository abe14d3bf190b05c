// Opens libnvrtc by the CUDA major version the driver loads (nvrtc_library.hpp).
#include "nvrtc_library.hpp"

#include <cuplug/errors.hpp>
#include <cuplug/toolkit.hpp>

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <memory>

namespace cuplug::plugins {
namespace {

template <class F> void resolve(void *handle, F &slot, const char *name, bool required) {
  slot = reinterpret_cast<F>(::dlsym(handle, name));
  if (slot == nullptr && required)
    throw config_error(std::string("nvrtc: the opened libnvrtc has no ") + name);
}

std::vector<std::string> loaded_paths(void *symbol) {
  Dl_info info{};
  if (::dladdr(symbol, &info) == 0 || info.dli_fname == nullptr)
    return {};
  std::vector<std::string> out{info.dli_fname};
  if (char *real = ::realpath(info.dli_fname, nullptr)) {
    if (out.front() != real)
      out.emplace_back(real);
    std::free(real);
  }
  return out;
}

std::unique_ptr<nvrtc_library> open_nvrtc() {
  (void)preload_toolkit_libraries(); // libnvrtc.so.<M> from cuplug's toolkit search order
  const toolkit_choice wanted = wanted_toolkit();
  const int newest = wanted.major != 0 ? wanted.major : 13;
  std::string tried;
  for (int major = newest; major >= 12; --major) {
    const std::string soname = "libnvrtc.so." + std::to_string(major);
    void *handle = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char *why = ::dlerror();
      tried += (tried.empty() ? "" : "; ") + (why ? std::string(why) : soname + ": not found");
      continue;
    }
    auto lib = std::make_unique<nvrtc_library>();
    resolve(handle, lib->Version, "nvrtcVersion", true);
    resolve(handle, lib->GetErrorString, "nvrtcGetErrorString", true);
    resolve(handle, lib->GetNumSupportedArchs, "nvrtcGetNumSupportedArchs", true);
    resolve(handle, lib->GetSupportedArchs, "nvrtcGetSupportedArchs", true);
    resolve(handle, lib->CreateProgram, "nvrtcCreateProgram", true);
    resolve(handle, lib->DestroyProgram, "nvrtcDestroyProgram", true);
    resolve(handle, lib->AddNameExpression, "nvrtcAddNameExpression", true);
    resolve(handle, lib->CompileProgram, "nvrtcCompileProgram", true);
    resolve(handle, lib->GetProgramLogSize, "nvrtcGetProgramLogSize", true);
    resolve(handle, lib->GetProgramLog, "nvrtcGetProgramLog", true);
    resolve(handle, lib->GetPTXSize, "nvrtcGetPTXSize", true);
    resolve(handle, lib->GetPTX, "nvrtcGetPTX", true);
    resolve(handle, lib->GetCUBINSize, "nvrtcGetCUBINSize", true);
    resolve(handle, lib->GetCUBIN, "nvrtcGetCUBIN", true);
    resolve(handle, lib->GetLTOIRSize, "nvrtcGetLTOIRSize", true);
    resolve(handle, lib->GetLTOIR, "nvrtcGetLTOIR", true);
    resolve(handle, lib->GetLoweredName, "nvrtcGetLoweredName", true);
    resolve(handle, lib->SetFlowCallback, "nvrtcSetFlowCallback", false);
    if (lib->Version(&lib->major, &lib->minor) != NVRTC_SUCCESS)
      throw config_error("nvrtc: nvrtcVersion failed in " + soname);
    lib->paths = loaded_paths(reinterpret_cast<void *>(lib->Version));
    lib->why = wanted.why;
    return lib; // the handle stays open for the process
  }
  std::string message = "nvrtc: no NVRTC this driver can load code from (" + wanted.why +
                        "; looked for " + tried + ")";
  if (wanted.major == 12)
    message += ". A CUDA 12 driver needs CUDA 12's NVRTC: pip install 'cuplug[cu12]' (NVIDIA's "
               "CUDA 12 wheels), or install a CUDA 12 toolkit and set CUDA_PATH to it, or update "
               "the driver to R580 (CUDA 13) or newer";
  else
    message += ". pip install 'cuplug[cu13]' (NVIDIA's CUDA 13 wheels), or install the CUDA "
               "toolkit and set CUDA_PATH to it";
  throw config_error(message);
}

} // namespace

const nvrtc_library &nvrtc() {
  // No lock held while opening (the core may log, and a log sink may wait for Python's GIL): two
  // threads may both open it, the first to publish wins, and dlopen counts the other's handle.
  static std::atomic<nvrtc_library *> opened{nullptr};
  if (nvrtc_library *lib = opened.load(std::memory_order_acquire))
    return *lib;
  std::unique_ptr<nvrtc_library> fresh = open_nvrtc();
  nvrtc_library *expected = nullptr;
  if (opened.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel))
    return *fresh.release();
  return *expected;
}

} // namespace cuplug::plugins
