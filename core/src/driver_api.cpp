// Opens the CUDA driver at run time and fills the entry-point table through cuGetProcAddress.
#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace cuplug {
namespace {

using get_proc_address_fn = CUresult (*)(const char *, void **, int, cuuint64_t,
                                         CUdriverProcAddressQueryResult *);

// Entries whose table prototype (CUDA 13.0's) is newer than CUDA 12.0's form, found from
// cudaTypedefs.h's PFN_<name>_v<version> typedefs (tests/cpp/core/test_driver_versions.cpp reads
// them again and fails when this list and the header disagree). `version`: the first driver that
// hands out the table's form; `older`: the form a shim serves on drivers before it (0: none, the
// member stays nullptr). Every other entry has had its table form since CUDA 12.0 or before
// (cuEventElapsedTime_v2, 12.8, kept the prototype of the form before it).
struct versioned_entry {
  const char *name;
  int version;
  int older;
};
constexpr versioned_entry versioned_entries[] = {
    {"cuFuncGetName", 12030, 0},              // new in 12.3
    {"cuStreamGetCaptureInfo", 12030, 11030}, // _v3 (12.3) added edgeData_out
    {"cuGraphAddDependencies", 12030, 10000}, // _v2 (12.3) added edgeData
    {"cuFuncGetParamInfo", 12040, 0},         // new in 12.4
    {"cuCtxCreate", 12050, 3020},             // _v4 (12.5) takes CUctxCreateParams
    {"cuCtxSynchronize", 13000, 2000},        // _v2 (13.0) takes a context
    {"cuCtxGetDevice", 13000, 2000},          // _v2 (13.0) takes a context
};

const versioned_entry *find_versioned(const std::string &name) {
  for (const auto &e : versioned_entries)
    if (name == e.name)
      return &e;
  return nullptr;
}

// The older forms behind the shims (set once, before the table is published).
struct older_forms {
  PFN_cuStreamGetCaptureInfo_v11030 stream_get_capture_info = nullptr;
  PFN_cuGraphAddDependencies_v10000 graph_add_dependencies = nullptr;
  PFN_cuCtxCreate_v3020 ctx_create = nullptr;
  PFN_cuCtxSynchronize_v2000 ctx_synchronize = nullptr;
  PFN_cuCtxGetDevice_v2000 ctx_get_device = nullptr;
};

struct driver_state {
  driver_api api;
  older_forms older;
  get_proc_address_fn get_proc = nullptr;
  int version = 0; // cuDriverGetVersion
  bool ok = false;
  std::string library; // what was opened, or tried
  std::string problem; // why it is unusable; empty when ok
};

void *proc(const driver_state &s, const char *name, int cuda_version) {
  void *p = nullptr;
  CUdriverProcAddressQueryResult found{};
  if (s.get_proc(name, &p, cuda_version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
      found != CU_GET_PROC_ADDRESS_SUCCESS)
    return nullptr;
  return p;
}

// Fills one entry of the table with the newest form the driver has at or before CUDA_VERSION; it
// stays nullptr when the driver lacks the entry point or is older than the table's form of it.
template <class F> void fetch(const driver_state &s, const char *entry, F &slot) {
  const std::string name(entry, std::strcspn(entry, ","));
  const versioned_entry *v = find_versioned(name);
  if (v != nullptr && s.version < v->version)
    return; // the driver's form has another prototype: see install_shims
  slot = reinterpret_cast<F>(proc(s, name.c_str(), std::min(s.version, CUDA_VERSION)));
}

driver_state &state() {
  // Never destroyed: driver calls may come from destructors during process exit.
  static driver_state *s = new driver_state;
  return *s;
}

// A shim's refusal of arguments the older form cannot honour, for check() to explain; per thread,
// as the call that caused it.
struct refusal {
  const char *routine = nullptr;
  std::string message;
};
thread_local refusal pending_refusal;

std::string branch_suffix(int cuda_version) {
  const std::string branch = driver_branch(cuda_version);
  return branch.empty() ? std::string() : " (" + branch + ")";
}

// "<what> needs a CUDA 12.4 driver (R550) or newer; this driver is CUDA 12.2 (R535)".
std::string needs_text(const std::string &what, int version, int have) {
  return what + " needs a CUDA " + cuda_version_text(version) + " driver" + branch_suffix(version) +
         " or newer; this driver is CUDA " + cuda_version_text(have) + branch_suffix(have);
}

CUresult refuse(const char *routine, const std::string &what, int version,
                const char *instead = nullptr) {
  pending_refusal.routine = routine;
  pending_refusal.message = needs_text(what, version, state().version);
  if (instead != nullptr)
    pending_refusal.message += std::string(": ") + instead;
  return CUDA_ERROR_NOT_SUPPORTED;
}

// The shims: the table's prototype over a driver's older form, for the arguments whose meaning the
// older form keeps exactly; anything else is refused (refuse above), never approximated.

// Whether `ctx` is nullptr or the calling thread's current context; `result` is cuCtxGetCurrent's
// failure otherwise.
bool current_or_null(CUcontext ctx, CUresult &result) {
  result = CUDA_SUCCESS;
  if (ctx == nullptr)
    return true;
  CUcontext current = nullptr;
  result = state().api.cuCtxGetCurrent(&current);
  return result == CUDA_SUCCESS && current == ctx;
}

// cuCtxSynchronize_v2(ctx) as cuCtxSynchronize(), which synchronizes the current context.
CUresult CUDAAPI shim_ctx_synchronize(CUcontext ctx) {
  pending_refusal.routine = nullptr;
  CUresult r;
  if (!current_or_null(ctx, r))
    return r != CUDA_SUCCESS
               ? r
               : refuse("cuCtxSynchronize", "cuCtxSynchronize of a context that is not current",
                        13000, "make the context current first");
  return state().older.ctx_synchronize();
}

// cuCtxGetDevice_v2(device, ctx) as cuCtxGetDevice(device), which asks about the current context.
CUresult CUDAAPI shim_ctx_get_device(CUdevice *device, CUcontext ctx) {
  pending_refusal.routine = nullptr;
  CUresult r;
  if (!current_or_null(ctx, r))
    return r != CUDA_SUCCESS
               ? r
               : refuse("cuCtxGetDevice", "cuCtxGetDevice of a context that is not current", 13000,
                        "make the context current first");
  return state().older.ctx_get_device(device);
}

// cuCtxCreate_v4 without CUctxCreateParams as cuCtxCreate_v2 (the params name exactly one of
// execution affinity and CIG, which cuCtxCreate_v2 has no way to ask for).
CUresult CUDAAPI shim_ctx_create(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                                 CUdevice dev) {
  pending_refusal.routine = nullptr;
  if (params != nullptr)
    return refuse("cuCtxCreate", "cuCtxCreate with CUctxCreateParams (execution affinity or CIG)",
                  12050);
  return state().older.ctx_create(pctx, flags, dev);
}

// cuStreamGetCaptureInfo_v3 without edgeData_out as _v2 (drivers before 12.3 have no edge data to
// return, but the array the caller asked for would have to live until its next stream call).
CUresult CUDAAPI shim_stream_get_capture_info(CUstream stream, CUstreamCaptureStatus *status,
                                              cuuint64_t *id, CUgraph *graph,
                                              const CUgraphNode **dependencies,
                                              const CUgraphEdgeData **edge_data, size_t *count) {
  pending_refusal.routine = nullptr;
  if (edge_data != nullptr)
    return refuse("cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo with edgeData_out", 12030);
  return state().older.stream_get_capture_info(stream, status, id, graph, dependencies, count);
}

// cuGraphAddDependencies_v2 with no or all-default (zeroed) edge data as _v1: cuda.h says null
// edge data means zeroed edge data, the only kind _v1 makes.
CUresult CUDAAPI shim_graph_add_dependencies(CUgraph graph, const CUgraphNode *from,
                                             const CUgraphNode *to,
                                             const CUgraphEdgeData *edge_data, size_t count) {
  pending_refusal.routine = nullptr;
  if (edge_data != nullptr) {
    const auto *bytes = reinterpret_cast<const unsigned char *>(edge_data);
    if (std::any_of(bytes, bytes + count * sizeof(CUgraphEdgeData),
                    [](unsigned char b) { return b != 0; }))
      return refuse("cuGraphAddDependencies",
                    "cuGraphAddDependencies with edge data other than the default", 12030);
  }
  return state().older.graph_add_dependencies(graph, from, to, count);
}

// On a driver older than an entry's table form, fetches the older form (versioned_entries) and
// puts `shim` in its place; with no older form the member stays nullptr.
template <class Older, class Member>
void shim(driver_state &s, const char *name, Older &older, Member &member, Member with) {
  const versioned_entry *v = find_versioned(name);
  if (v == nullptr || s.version >= v->version || v->older == 0)
    return;
  older = reinterpret_cast<Older>(proc(s, name, v->older));
  if (older != nullptr)
    member = with;
}

void install_shims(driver_state &s) {
  shim(s, "cuCtxSynchronize", s.older.ctx_synchronize, s.api.cuCtxSynchronize,
       &shim_ctx_synchronize);
  shim(s, "cuCtxGetDevice", s.older.ctx_get_device, s.api.cuCtxGetDevice, &shim_ctx_get_device);
  shim(s, "cuCtxCreate", s.older.ctx_create, s.api.cuCtxCreate, &shim_ctx_create);
  shim(s, "cuStreamGetCaptureInfo", s.older.stream_get_capture_info, s.api.cuStreamGetCaptureInfo,
       &shim_stream_get_capture_info);
  shim(s, "cuGraphAddDependencies", s.older.graph_add_dependencies, s.api.cuGraphAddDependencies,
       &shim_graph_add_dependencies);
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
                "driver for CUDA 12.0 (R525) or newer";
    return;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(s.get_proc), &info) && info.dli_fname)
    s.library = info.dli_fname;
  // The version first (cuDriverGetVersion works before cuInit): what each entry is asked for
  // depends on it, and asking a driver for a newer CUDA version than its own is an error.
  const auto get_version =
      reinterpret_cast<PFN_cuDriverGetVersion_v2020>(proc(s, "cuDriverGetVersion", 2020));
  if (!get_version || get_version(&s.version) != CUDA_SUCCESS) {
    s.problem = "the CUDA driver library '" + s.library +
                "' does not tell its version (cuDriverGetVersion); update the NVIDIA driver";
    return;
  }
  if (s.version < oldest_driver_version) {
    s.problem = "the CUDA driver library '" + s.library + "' is for CUDA " +
                cuda_version_text(s.version) + "; cuplug needs a driver for CUDA 12.0 (R525) " +
                "or newer";
    return;
  }
  // #__VA_ARGS__ is the entry as written, "cuMemAlloc" or "cuCtxSynchronize, cuCtxSynchronize_v2"
  // (stringizing keeps cuda.h's cuMemAlloc -> cuMemAlloc_v2 macros from applying): the base name
  // cuGetProcAddress wants is what comes before any comma.
#define CUPLUG_DRIVER_FETCH(...) fetch(s, #__VA_ARGS__, s.api.CUPLUG_DRIVER_NAME(__VA_ARGS__));
  CUPLUG_DRIVER_FUNCTIONS(CUPLUG_DRIVER_FETCH)
#undef CUPLUG_DRIVER_FETCH
  install_shims(s);
  if (!s.api.cuInit || !s.api.cuDriverGetVersion) {
    s.problem = "the CUDA driver library '" + s.library + "' (CUDA " +
                cuda_version_text(s.version) +
                ") does not provide cuInit; update the NVIDIA driver";
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
  if (!s.ok || cuda_version > s.version)
    return nullptr;
  return proc(s, name, cuda_version);
}

int driver_version() {
  driver();
  return state().version;
}

std::string cuda_version_text(int cuda_version) {
  return std::to_string(cuda_version / 1000) + "." + std::to_string(cuda_version % 1000 / 10);
}

std::string driver_branch(int cuda_version) {
  // The CUDA version each Linux driver branch reports (the toolkits' installers:
  // cuda_12.0.0_525.60.13 ... cuda_13.0.0_580.65.06; R565 reports 12.7, which no toolkit has).
  static constexpr struct {
    int version;
    const char *branch;
  } branches[] = {{12000, "R525"}, {12010, "R530"}, {12020, "R535"}, {12030, "R545"},
                  {12040, "R550"}, {12050, "R555"}, {12060, "R560"}, {12070, "R565"},
                  {12080, "R570"}, {12090, "R575"}, {13000, "R580"}};
  for (const auto &b : branches)
    if (b.version == cuda_version)
      return b.branch;
  return {};
}

int driver_entry_version(const char *name) {
  // #__VA_ARGS__ as in load(): the member's name is what comes before any comma.
#define CUPLUG_DRIVER_ENTRY_NAME(...) #__VA_ARGS__,
  static constexpr const char *entries[] = {CUPLUG_DRIVER_FUNCTIONS(CUPLUG_DRIVER_ENTRY_NAME)};
#undef CUPLUG_DRIVER_ENTRY_NAME
  const std::string wanted(name);
  for (const char *entry : entries)
    if (wanted == std::string(entry, std::strcspn(entry, ","))) {
      const versioned_entry *v = find_versioned(wanted);
      return v != nullptr ? v->version : oldest_driver_version;
    }
  return 0;
}

std::vector<driver_entry_state> driver_entries_after_oldest() {
  driver();
  const auto &s = state();
  std::vector<driver_entry_state> out;
  for (const auto &e : versioned_entries) {
    driver_entry_state st;
    st.name = e.name;
    st.version = e.version;
    st.native = s.version >= e.version;
    st.shimmed = !st.native && e.older != 0 && proc(s, e.name, e.older) != nullptr;
    out.push_back(std::move(st));
  }
  return out;
}

void check(CUresult result, const char *routine) {
  if (result != CUDA_SUCCESS) {
    if (result == CUDA_ERROR_NOT_SUPPORTED && pending_refusal.routine != nullptr &&
        std::strcmp(pending_refusal.routine, routine) == 0) {
      pending_refusal.routine = nullptr;
      throw not_supported(std::move(pending_refusal.message));
    }
    if (result == CUDA_ERROR_OUT_OF_MEMORY)
      throw out_of_memory(routine, 0, 0, 0, 0);
    throw cuda_error(routine, result);
  }
}

namespace detail {
void throw_missing_entry(const char *name) {
  driver(); // a missing driver explains itself first
  const int have = state().version;
  if (const versioned_entry *v = find_versioned(name); v != nullptr && have < v->version)
    throw not_supported(needs_text(name, v->version, have));
  throw not_supported(std::string(name) + " is not provided by the CUDA driver '" +
                      driver_library_description() + "' (CUDA " + cuda_version_text(have) +
                      "); update the NVIDIA driver");
}
} // namespace detail

} // namespace cuplug
