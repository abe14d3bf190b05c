// Opens the CUDA driver at run time and fills the entry-point table through cuGetProcAddress.
#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace cuplug {
namespace {

using get_proc_address_fn = CUresult (*)(const char *, void **, int, cuuint64_t,
                                         CUdriverProcAddressQueryResult *);

struct driver_state {
  driver_api api;
  get_proc_address_fn get_proc = nullptr;
  bool ok = false;
  std::string library; // what was opened, or tried
  std::string problem; // why it is unusable; empty when ok
};

// Fills one entry of the table; it stays nullptr when the driver lacks that entry point.
template <class F> void fetch(const driver_state &s, const char *entry, F &slot) {
  const std::string name(entry, std::strcspn(entry, ","));
  void *p = nullptr;
  CUdriverProcAddressQueryResult found{};
  if (s.get_proc(name.c_str(), &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) ==
          CUDA_SUCCESS &&
      found == CU_GET_PROC_ADDRESS_SUCCESS)
    slot = reinterpret_cast<F>(p);
}

driver_state &state() {
  // Never destroyed: driver calls may come from destructors during process exit.
  static driver_state *s = new driver_state;
  return *s;
}

void load(driver_state &s) {
  const char *env = std::getenv("CUPLUG_CUDA_DRIVER");
  s.library = (env && *env) ? env : "libcuda.so.1";
  // dlopen reads a FIFO (or /dev/zero) named there until it ends: forever. A path (a name with
  // a slash, which dlopen opens as it is) must be a regular file; a missing one is dlopen's to say.
  struct stat st {};
  if (env && *env && std::strchr(env, '/') != nullptr && ::stat(env, &st) == 0 &&
      !S_ISREG(st.st_mode)) {
    s.problem = "CUPLUG_CUDA_DRIVER=" + s.library + " is not a regular file (" +
                (S_ISDIR(st.st_mode)    ? "a directory"
                 : S_ISFIFO(st.st_mode) ? "a FIFO"
                                        : "a device or socket") +
                "); set CUPLUG_CUDA_DRIVER to the full path of libcuda.so.1, or unset it";
    return;
  }
  // The driver stays loaded for the life of the process (no dlclose): objects freed at exit
  // still call into it.
  void *handle = dlopen(s.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    s.problem = "the CUDA driver library '" + s.library + "' could not be loaded (" +
                (why ? why : "unknown reason") +
                "): install the NVIDIA driver, or set CUPLUG_CUDA_DRIVER to the full path of "
                "libcuda.so.1";
    return;
  }
  s.get_proc = reinterpret_cast<get_proc_address_fn>(dlsym(handle, "cuGetProcAddress_v2"));
  if (!s.get_proc) {
    s.problem = "the CUDA driver library '" + s.library +
                "' has no cuGetProcAddress_v2: it is older than CUDA 12.0; cuplug needs a "
                "driver for CUDA 13 (R580 or newer)";
    return;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(s.get_proc), &info) && info.dli_fname)
    s.library = info.dli_fname;
    // #__VA_ARGS__ is the entry as written, "cuMemAlloc" or "cuCtxSynchronize, cuCtxSynchronize_v2"
    // (stringizing keeps cuda.h's cuMemAlloc -> cuMemAlloc_v2 macros from applying): the base name
    // cuGetProcAddress wants is what comes before any comma.
#define CUPLUG_DRIVER_FETCH(...) fetch(s, #__VA_ARGS__, s.api.CUPLUG_DRIVER_NAME(__VA_ARGS__));
  CUPLUG_DRIVER_FUNCTIONS(CUPLUG_DRIVER_FETCH)
#undef CUPLUG_DRIVER_FETCH
  if (!s.api.cuInit || !s.api.cuDriverGetVersion) {
    s.problem = "the CUDA driver library '" + s.library + "' does not provide cuInit for CUDA " +
                std::to_string(CUDA_VERSION / 1000) + "; update the NVIDIA driver";
    return;
  }
  s.ok = true;
}

// No usable driver library: a cuda_error with the code cuInit gives on a machine without a
// device (CUDA_ERROR_NO_DEVICE, so code sorting errors by code and class sees "no device"), but
// worded cause first: "<routine> failed: no CUDA-capable device is detected - ..." would open
// with a device when what is missing is the library, and the fix would come last.
class driver_missing final : public cuda_error {
public:
  explicit driver_missing(const std::string &problem)
      : cuda_error("cuInit", CUDA_ERROR_NO_DEVICE),
        message_(problem + " [cuInit: CUDA_ERROR_NO_DEVICE]") {}
  const char *what() const noexcept override { return message_.c_str(); }

private:
  std::string message_;
};

driver_state &loaded() {
  static std::once_flag once;
  auto &s = state();
  std::call_once(once, [&] { load(s); });
  return s;
}

} // namespace

const driver_api &driver() {
  auto &s = loaded();
  if (!s.ok)
    throw driver_missing(s.problem);
  return s.api;
}

bool driver_available() noexcept {
  try {
    return loaded().ok;
  } catch (...) {
    return false;
  }
}

std::string driver_library_description() {
  auto &s = loaded();
  return s.ok ? s.library : s.problem;
}

void *driver_symbol(const char *name, int cuda_version) {
  auto &s = loaded();
  if (!s.ok)
    return nullptr;
  void *p = nullptr;
  CUdriverProcAddressQueryResult found{};
  if (s.get_proc(name, &p, cuda_version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
      found != CU_GET_PROC_ADDRESS_SUCCESS)
    return nullptr;
  return p;
}

void check(CUresult result, const char *routine) {
  if (result != CUDA_SUCCESS) {
    if (result == CUDA_ERROR_OUT_OF_MEMORY)
      throw out_of_memory(routine, 0, 0, 0, 0);
    throw cuda_error(routine, result);
  }
}

namespace detail {
void throw_missing_entry(const char *name) {
  driver(); // a missing driver explains itself first
  throw not_supported(std::string(name) + " is not provided by the CUDA driver '" +
                      driver_library_description() + "'; update the NVIDIA driver");
}
} // namespace detail

} // namespace cuplug
