// The CUDA driver's entry points, opened at run time so nothing links libcuda.
#pragma once

#include <cuda.h>
#include <cudaProfiler.h>

#include <cstdint>
#include <string>
#include <vector>

// cudaGL.h's two registration entry points, declared with GL's types spelled out (GLuint and
// GLenum are unsigned int in every GL header; cudaGL.h's declarations are the same functions) so
// that no core header needs a GL header.
extern "C" {
CUresult CUDAAPI cuGraphicsGLRegisterBuffer(CUgraphicsResource *pCudaResource, unsigned int buffer,
                                            unsigned int Flags);
CUresult CUDAAPI cuGraphicsGLRegisterImage(CUgraphicsResource *pCudaResource, unsigned int image,
                                           unsigned int target, unsigned int Flags);
}

namespace cuplug {

// Every driver function cuplug calls, in the order of driver_api's members. Plugins compile in
// the offset of each member they call, so the table is APPEND ONLY: a new entry point goes at the
// end of this list; removing, reordering or retyping an entry needs a new plugin_abi_major
// (plugin_abi.hpp). tests/cpp/core/test_driver_api_layout.cpp freezes every offset and type, and
// plugin manifests carry driver_api_entries, so a plugin built against a longer table than the
// running cuplug has is refused instead of reading past its end.
//
// X(name) types the member with cuda.h's prototype of `name` (its versioned form, e.g.
// cuMemAlloc_v2); X(name, prototype) with another one, for entry points whose CUDA 13 form (what
// cuGetProcAddress returns for CUDA_VERSION 13000) differs from cuda.h's unsuffixed prototype:
// cuCtxSynchronize and cuCtxGetDevice take a context (nullptr acts on the current one).
//
// The table's prototypes are CUDA 13.0's; cuplug runs on drivers from CUDA 12.0 (R525) up. Each
// member is fetched with cuGetProcAddress(name, min(driver version, CUDA_VERSION)), which hands
// out the newest form the driver has; driver_api.cpp lists the entries whose table form is newer
// than 12.0 (driver_entry_version). On a driver older than that, the member is either a shim
// with the table's prototype over the older form (arguments the older form cannot honour are
// refused: CUDA_ERROR_NOT_SUPPORTED, which check() turns into not_supported saying why), or
// nullptr, and CUPLUG_CALL throws not_supported naming the entry and the driver that has it.
// clang-format off
#define CUPLUG_DRIVER_FUNCTIONS(X)                                                                 \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorString) X(cuGetErrorName)                           \
  X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceTotalMem)                       \
  X(cuDeviceGetAttribute) X(cuDeviceGetByPCIBusId) X(cuDeviceGetPCIBusId)                         \
  X(cuDeviceCanAccessPeer) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)               \
  X(cuDevicePrimaryCtxGetState) X(cuDeviceGetDefaultMemPool)                                      \
  X(cuCtxCreate) X(cuCtxDestroy) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuCtxGetCurrent)        \
  X(cuCtxSetCurrent) X(cuCtxSetLimit) X(cuCtxGetLimit)                                            \
  X(cuCtxSetCacheConfig) X(cuCtxGetCacheConfig) X(cuCtxSetSharedMemConfig)                        \
  X(cuCtxGetSharedMemConfig) X(cuCtxGetApiVersion) X(cuCtxEnablePeerAccess)                       \
  X(cuCtxDisablePeerAccess) X(cuCtxGetFlags)                                                      \
  X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuStreamDestroy) X(cuStreamSynchronize)       \
  X(cuStreamQuery) X(cuStreamWaitEvent) X(cuStreamAttachMemAsync) X(cuStreamGetPriority)          \
  X(cuStreamGetFlags)                                                                             \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventQuery)       \
  X(cuEventElapsedTime) X(cuIpcGetEventHandle) X(cuIpcOpenEventHandle)                            \
  X(cuMemAlloc) X(cuMemFree) X(cuMemAllocPitch) X(cuMemGetInfo) X(cuMemGetAddressRange)           \
  X(cuMemAllocManaged) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemHostGetDevicePointer)            \
  X(cuMemHostGetFlags) X(cuMemHostRegister) X(cuMemHostUnregister) X(cuIpcGetMemHandle)           \
  X(cuIpcOpenMemHandle) X(cuIpcCloseMemHandle) X(cuMemAllocAsync) X(cuMemFreeAsync)               \
  X(cuMemAllocFromPoolAsync) X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemPoolSetAttribute)      \
  X(cuMemPoolGetAttribute) X(cuMemPoolTrimTo) X(cuPointerGetAttribute)                            \
  X(cuMemcpy) X(cuMemcpyAsync) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD)                    \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemcpyPeer)                  \
  X(cuMemcpyPeerAsync) X(cuMemcpy2D) X(cuMemcpy2DUnaligned) X(cuMemcpy2DAsync) X(cuMemcpy3D)      \
  X(cuMemcpy3DAsync) X(cuMemcpy3DPeer) X(cuMemcpy3DPeerAsync)                                     \
  X(cuMemsetD8) X(cuMemsetD16) X(cuMemsetD32) X(cuMemsetD2D8) X(cuMemsetD2D16) X(cuMemsetD2D32)   \
  X(cuMemsetD8Async) X(cuMemsetD16Async) X(cuMemsetD32Async) X(cuMemsetD2D8Async)                 \
  X(cuMemsetD2D16Async) X(cuMemsetD2D32Async)                                                     \
  X(cuModuleLoad) X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleUnload)                     \
  X(cuModuleGetFunction) X(cuModuleGetGlobal)                                                     \
  X(cuLinkCreate) X(cuLinkAddData) X(cuLinkAddFile) X(cuLinkComplete) X(cuLinkDestroy)            \
  X(cuLaunchKernel) X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuFuncSetCacheConfig)           \
  X(cuFuncGetParamInfo) X(cuFuncGetName)                                                          \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuOccupancyMaxPotentialBlockSize)              \
  X(cuProfilerStart) X(cuProfilerStop)                                                            \
  X(cuCtxSynchronize, cuCtxSynchronize_v2) X(cuCtxGetDevice, cuCtxGetDevice_v2)               \
  X(cuArrayCreate) X(cuArrayGetDescriptor) X(cuArray3DCreate) X(cuArray3DGetDescriptor)           \
  X(cuArrayDestroy) X(cuMemcpyHtoA) X(cuMemcpyAtoH) X(cuMemcpyAtoD) X(cuMemcpyDtoA)               \
  X(cuMemcpyAtoA) X(cuMemcpyHtoAAsync) X(cuMemcpyAtoHAsync)                                       \
  X(cuTexObjectCreate) X(cuTexObjectDestroy) X(cuTexObjectGetResourceDesc)                        \
  X(cuSurfObjectCreate) X(cuSurfObjectDestroy)                                                    \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuStreamIsCapturing) X(cuStreamGetCaptureInfo)  \
  X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphClone) X(cuGraphAddKernelNode)                      \
  X(cuGraphAddMemcpyNode) X(cuGraphAddMemsetNode) X(cuGraphAddHostNode) X(cuGraphAddEmptyNode)    \
  X(cuGraphAddChildGraphNode) X(cuGraphAddDependencies) X(cuGraphGetNodes) X(cuGraphGetRootNodes) \
  X(cuGraphNodeGetType) X(cuGraphKernelNodeGetParams) X(cuGraphKernelNodeSetParams)               \
  X(cuGraphDebugDotPrint) X(cuGraphInstantiateWithFlags) X(cuGraphExecDestroy) X(cuGraphLaunch)   \
  X(cuGraphUpload) X(cuGraphExecUpdate) X(cuGraphExecKernelNodeSetParams) X(cuLaunchKernelEx)   \
  X(cuGraphicsGLRegisterBuffer) X(cuGraphicsGLRegisterImage) X(cuGraphicsUnregisterResource)     \
  X(cuGraphicsMapResources) X(cuGraphicsUnmapResources) X(cuGraphicsResourceGetMappedPointer)    \
  X(cuGraphicsSubResourceGetMappedArray) X(cuGraphicsResourceSetMapFlags)
// clang-format on

// The member name and prototype of an entry X(name) or X(name, prototype).
#define CUPLUG_DRIVER_NAME_(name, ...) name
#define CUPLUG_DRIVER_NAME(...) CUPLUG_DRIVER_NAME_(__VA_ARGS__, ~)
#define CUPLUG_DRIVER_PROTOTYPE_(name, prototype, ...) prototype
#define CUPLUG_DRIVER_PROTOTYPE(...) CUPLUG_DRIVER_PROTOTYPE_(__VA_ARGS__, __VA_ARGS__, ~)

// Deprecated entry points (shared-memory bank config) stay for PyCUDA compatibility.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
struct driver_api {
#define CUPLUG_DRIVER_MEMBER(...)                                                                  \
  decltype(&::CUPLUG_DRIVER_PROTOTYPE(__VA_ARGS__)) CUPLUG_DRIVER_NAME(__VA_ARGS__) = nullptr;
  CUPLUG_DRIVER_FUNCTIONS(CUPLUG_DRIVER_MEMBER)
#undef CUPLUG_DRIVER_MEMBER
};
#pragma GCC diagnostic pop

// How many entry points driver_api holds; CUPLUG_PLUGIN writes it into the plugin's manifest.
#define CUPLUG_DRIVER_COUNT(...) +1
inline constexpr std::uint32_t driver_api_entries = 0 CUPLUG_DRIVER_FUNCTIONS(CUPLUG_DRIVER_COUNT);
#undef CUPLUG_DRIVER_COUNT
// One function pointer per entry and no padding: an entry's offset is its index in the list.
static_assert(sizeof(driver_api) == driver_api_entries * sizeof(void (*)()),
              "driver_api must hold only the function pointers of CUPLUG_DRIVER_FUNCTIONS");

// The loaded driver. The first call opens $CUPLUG_CUDA_DRIVER or libcuda.so.1; if that fails it
// throws cuda_error(CUDA_ERROR_NO_DEVICE) saying which library was tried and why it failed, and
// every later call throws the same. Entry points the installed driver lacks stay nullptr and
// throw not_supported when used through call().
const driver_api &driver();

// True when driver() would succeed; never throws. Used by `python -m cuplug info`.
bool driver_available() noexcept;

// Path of the opened driver library, or the reason it could not be opened.
std::string driver_library_description();

// Any further entry point by its base name (one the table does not hold), in its form for
// `cuda_version` (the PFN_<name>_v<version> of cudaTypedefs.h to call it through); nullptr when
// the driver does not have it, or is older than `cuda_version` (a 12.x driver asked for 13000).
void *driver_symbol(const char *name, int cuda_version = CUDA_VERSION);

// The oldest driver cuplug runs on: CUDA 12.0 (cuGetProcAddress_v2 and every table entry's
// 12.0 form appeared there).
inline constexpr int oldest_driver_version = 12000;

// The CUDA version the loaded driver reports (cuDriverGetVersion), e.g. 12040; throws as driver()
// does when there is no usable driver.
int driver_version();

// "12.4" for 12040.
std::string cuda_version_text(int cuda_version);

// The NVIDIA driver branch that first reported `cuda_version`: 12000 -> "R525", 12040 -> "R550",
// 13000 -> "R580"; "" for a version this table does not know.
std::string driver_branch(int cuda_version);

// The oldest driver version (cuDriverGetVersion's number) whose form of table entry `name` has
// the table's prototype: oldest_driver_version for most, e.g. 12040 for cuFuncGetParamInfo, 13000
// for cuCtxSynchronize; 0 when `name` is not a member of driver_api.
int driver_entry_version(const char *name);

// One table entry newer than CUDA 12.0, and what the loaded driver gives for it.
struct driver_entry_state {
  std::string name;
  int version = 0;      // driver_entry_version(name)
  bool native = false;  // the driver's own form (the driver is at least `version`)
  bool shimmed = false; // an older form behind a shim with the table's prototype
};
// Every entry with driver_entry_version above oldest_driver_version, oldest first; throws as
// driver() does when there is no usable driver.
std::vector<driver_entry_state> driver_entries_after_oldest();

// Throws cuda_error(routine, result) unless result is CUDA_SUCCESS.
void check(CUresult result, const char *routine);

} // namespace cuplug

// Calls a driver function through the table, throwing cuda_error named after it on failure.
#define CUPLUG_CALL(name, ...)                                                                     \
  ::cuplug::check(::cuplug::detail::entry(::cuplug::driver().name, #name)(__VA_ARGS__), #name)

namespace cuplug::detail {
[[noreturn]] void throw_missing_entry(const char *name);
template <class F> F entry(F f, const char *name) {
  if (f == nullptr)
    throw_missing_entry(name);
  return f;
}
} // namespace cuplug::detail
