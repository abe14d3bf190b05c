// The CUDA driver's entry points, opened at run time so nothing links libcuda.
#pragma once

#include <cuda.h>
#include <cudaProfiler.h>

#include <string>

namespace cuplug {

// Every driver function cuplug calls. Each member has the prototype cuda.h gives it (its
// versioned name, e.g. cuMemAlloc_v2) and is fetched with cuGetProcAddress for CUDA_VERSION.
#define CUPLUG_DRIVER_FUNCTIONS(X)                                                                 \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorString) X(cuGetErrorName)                           \
  X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceTotalMem)                       \
  X(cuDeviceGetAttribute) X(cuDeviceGetByPCIBusId) X(cuDeviceGetPCIBusId)                         \
  X(cuDeviceCanAccessPeer) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)               \
  X(cuDevicePrimaryCtxGetState) X(cuDeviceGetDefaultMemPool)                                      \
  X(cuCtxCreate) X(cuCtxDestroy) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuCtxGetCurrent)        \
  X(cuCtxSetCurrent) X(cuCtxSetLimit) X(cuCtxGetLimit)      \
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
  X(cuProfilerStart) X(cuProfilerStop)

// Deprecated entry points (shared-memory bank config) stay for PyCUDA compatibility.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
// Entry points whose CUDA 13 form (what cuGetProcAddress returns for CUDA_VERSION 13000) takes
// one more argument than cuda.h's unsuffixed prototype: the table holds the CUDA 13 form.
// Pass nullptr as the context to act on the current one.
#define CUPLUG_DRIVER_FUNCTIONS_CUDA13(X)                                                          \
  X(cuCtxSynchronize, cuCtxSynchronize_v2) X(cuCtxGetDevice, cuCtxGetDevice_v2)

struct driver_api {
#define CUPLUG_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  CUPLUG_DRIVER_FUNCTIONS(CUPLUG_DRIVER_MEMBER)
#undef CUPLUG_DRIVER_MEMBER
#define CUPLUG_DRIVER_MEMBER_AS(name, prototype) decltype(&::prototype) name = nullptr;
  CUPLUG_DRIVER_FUNCTIONS_CUDA13(CUPLUG_DRIVER_MEMBER_AS)
#undef CUPLUG_DRIVER_MEMBER_AS
};
#pragma GCC diagnostic pop

// The loaded driver. The first call opens $CUPLUG_CUDA_DRIVER or libcuda.so.1; if that fails it
// throws cuda_error(CUDA_ERROR_NO_DEVICE) saying which library was tried and why it failed, and
// every later call throws the same. Entry points the installed driver lacks stay nullptr and
// throw not_supported when used through call().
const driver_api &driver();

// True when driver() would succeed; never throws. Used by `python -m cuplug info`.
bool driver_available() noexcept;

// Path of the opened driver library, or the reason it could not be opened.
std::string driver_library_description();

// Any further entry point by its base name (e.g. interop's cuGraphicsGLRegisterBuffer);
// nullptr when the driver does not have it.
void *driver_symbol(const char *name, int cuda_version = CUDA_VERSION);

// Throws cuda_error(routine, result) unless result is CUDA_SUCCESS.
void check(CUresult result, const char *routine);

} // namespace cuplug

// Calls a driver function through the table, throwing cuda_error named after it on failure.
#define CUPLUG_CALL(name, ...)                                                                     \
  ::cuplug::check(::cuplug::detail::entry(::cuplug::driver().name, #name)(__VA_ARGS__), #name)

namespace cuplug::detail {
[[noreturn]] void throw_missing_entry(const char *name);
template <class F> F entry(F f, const char *name) {
  if (f == nullptr) throw_missing_entry(name);
  return f;
}
} // namespace cuplug::detail
