"""ctypes types, structs and prototypes of the driver's core entry points (init, devices,
contexts, memory and copies, streams and events, modules, launches), and PROTOTYPES: the argument
types of every entry point, these merged with fakecuda_objects' and fakecuda_graphics'. Kept apart
so fakecuda.py (the Driver and FakeCuda classes) stays small; fakecuda re-exports every name."""

from __future__ import annotations

from ctypes import (
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_float,
    c_int,
    c_size_t,
    c_ubyte,
    c_uint,
    c_uint64,
    c_ushort,
    c_void_p,
)

from . import fakecuda_graphics, fakecuda_objects

CUdeviceptr = c_uint64
CUresult = c_int
handle = c_void_p  # CUcontext, CUstream, CUevent, CUmodule, CUfunction, CUmemoryPool, ...


class CUipcMemHandle(Structure):
    _fields_ = [("reserved", c_char * 64)]


class CUipcEventHandle(Structure):
    _fields_ = [("reserved", c_char * 64)]


class CUDA_MEMCPY2D(Structure):
    _fields_ = [
        ("srcXInBytes", c_size_t),
        ("srcY", c_size_t),
        ("srcMemoryType", c_int),
        ("srcHost", c_void_p),
        ("srcDevice", CUdeviceptr),
        ("srcArray", c_void_p),
        ("srcPitch", c_size_t),
        ("dstXInBytes", c_size_t),
        ("dstY", c_size_t),
        ("dstMemoryType", c_int),
        ("dstHost", c_void_p),
        ("dstDevice", CUdeviceptr),
        ("dstArray", c_void_p),
        ("dstPitch", c_size_t),
        ("WidthInBytes", c_size_t),
        ("Height", c_size_t),
    ]


class CUDA_MEMCPY3D(Structure):
    _fields_ = [
        ("srcXInBytes", c_size_t),
        ("srcY", c_size_t),
        ("srcZ", c_size_t),
        ("srcLOD", c_size_t),
        ("srcMemoryType", c_int),
        ("srcHost", c_void_p),
        ("srcDevice", CUdeviceptr),
        ("srcArray", c_void_p),
        ("reserved0", c_void_p),
        ("srcPitch", c_size_t),
        ("srcHeight", c_size_t),
        ("dstXInBytes", c_size_t),
        ("dstY", c_size_t),
        ("dstZ", c_size_t),
        ("dstLOD", c_size_t),
        ("dstMemoryType", c_int),
        ("dstHost", c_void_p),
        ("dstDevice", CUdeviceptr),
        ("dstArray", c_void_p),
        ("reserved1", c_void_p),
        ("dstPitch", c_size_t),
        ("dstHeight", c_size_t),
        ("WidthInBytes", c_size_t),
        ("Height", c_size_t),
        ("Depth", c_size_t),
    ]


class CUDA_MEMCPY3D_PEER(Structure):
    _fields_ = [
        ("srcXInBytes", c_size_t),
        ("srcY", c_size_t),
        ("srcZ", c_size_t),
        ("srcLOD", c_size_t),
        ("srcMemoryType", c_int),
        ("srcHost", c_void_p),
        ("srcDevice", CUdeviceptr),
        ("srcArray", c_void_p),
        ("srcContext", c_void_p),
        ("srcPitch", c_size_t),
        ("srcHeight", c_size_t),
        ("dstXInBytes", c_size_t),
        ("dstY", c_size_t),
        ("dstZ", c_size_t),
        ("dstLOD", c_size_t),
        ("dstMemoryType", c_int),
        ("dstHost", c_void_p),
        ("dstDevice", CUdeviceptr),
        ("dstArray", c_void_p),
        ("dstContext", c_void_p),
        ("dstPitch", c_size_t),
        ("dstHeight", c_size_t),
        ("WidthInBytes", c_size_t),
        ("Height", c_size_t),
        ("Depth", c_size_t),
    ]


class CUmemLocation(Structure):
    _fields_ = [("type", c_int), ("id", c_int)]


class CUmemPoolProps(Structure):
    _fields_ = [
        ("allocType", c_int),
        ("handleTypes", c_int),
        ("location", CUmemLocation),
        ("win32SecurityAttributes", c_void_p),
        ("maxSize", c_size_t),
        ("usage", c_ushort),
        ("reserved", c_ubyte * 54),
    ]


class CUctxCreateParams(Structure):
    _fields_ = [
        ("execAffinityParams", c_void_p),
        ("numExecAffinityParams", c_int),
        ("cigParams", c_void_p),
    ]


P = POINTER
size_p = P(c_size_t)
int_p = P(c_int)
uint_p = P(c_uint)
dptr_p = P(CUdeviceptr)
handle_p = P(handle)

# Argument types of every entry point in cuplug's CUPLUG_DRIVER_FUNCTIONS, as cuGetProcAddress
# hands them out for CUDA 13.0 (cudaTypedefs.h's newest PFN_<name>_v<N> with N <= 13000).
PROTOTYPES = {
    "cuInit": [c_uint],
    "cuDriverGetVersion": [int_p],
    "cuGetErrorString": [c_int, P(c_char_p)],
    "cuGetErrorName": [c_int, P(c_char_p)],
    "cuDeviceGet": [int_p, c_int],
    "cuDeviceGetCount": [int_p],
    "cuDeviceGetName": [c_char_p, c_int, c_int],
    "cuDeviceTotalMem": [size_p, c_int],
    "cuDeviceGetAttribute": [int_p, c_int, c_int],
    "cuDeviceGetByPCIBusId": [int_p, c_char_p],
    "cuDeviceGetPCIBusId": [c_char_p, c_int, c_int],
    "cuDeviceCanAccessPeer": [int_p, c_int, c_int],
    "cuDevicePrimaryCtxRetain": [handle_p, c_int],
    "cuDevicePrimaryCtxRelease": [c_int],
    "cuDevicePrimaryCtxGetState": [c_int, uint_p, int_p],
    "cuDeviceGetDefaultMemPool": [handle_p, c_int],
    "cuCtxCreate": [handle_p, P(CUctxCreateParams), c_uint, c_int],
    "cuCtxDestroy": [handle],
    "cuCtxPushCurrent": [handle],
    "cuCtxPopCurrent": [handle_p],
    "cuCtxGetCurrent": [handle_p],
    "cuCtxSetCurrent": [handle],
    "cuCtxGetDevice": [int_p, handle],  # CUDA 13.0 form: (device, ctx or NULL for the current)
    "cuCtxSynchronize": [handle],  # CUDA 13.0 form: (ctx or NULL for the current)
    "cuCtxSetLimit": [c_int, c_size_t],
    "cuCtxGetLimit": [size_p, c_int],
    "cuCtxSetCacheConfig": [c_int],
    "cuCtxGetCacheConfig": [int_p],
    "cuCtxSetSharedMemConfig": [c_int],
    "cuCtxGetSharedMemConfig": [int_p],
    "cuCtxGetApiVersion": [handle, uint_p],
    "cuCtxEnablePeerAccess": [handle, c_uint],
    "cuCtxDisablePeerAccess": [handle],
    "cuCtxGetFlags": [uint_p],
    "cuStreamCreate": [handle_p, c_uint],
    "cuStreamCreateWithPriority": [handle_p, c_uint, c_int],
    "cuStreamDestroy": [handle],
    "cuStreamSynchronize": [handle],
    "cuStreamQuery": [handle],
    "cuStreamWaitEvent": [handle, handle, c_uint],
    "cuStreamAttachMemAsync": [handle, CUdeviceptr, c_size_t, c_uint],
    "cuStreamGetPriority": [handle, int_p],
    "cuStreamGetFlags": [handle, uint_p],
    "cuEventCreate": [handle_p, c_uint],
    "cuEventDestroy": [handle],
    "cuEventRecord": [handle, handle],
    "cuEventSynchronize": [handle],
    "cuEventQuery": [handle],
    "cuEventElapsedTime": [P(c_float), handle, handle],
    "cuIpcGetEventHandle": [P(CUipcEventHandle), handle],
    "cuIpcOpenEventHandle": [handle_p, CUipcEventHandle],
    "cuMemAlloc": [dptr_p, c_size_t],
    "cuMemFree": [CUdeviceptr],
    "cuMemAllocPitch": [dptr_p, size_p, c_size_t, c_size_t, c_uint],
    "cuMemGetInfo": [size_p, size_p],
    "cuMemGetAddressRange": [dptr_p, size_p, CUdeviceptr],
    "cuMemAllocManaged": [dptr_p, c_size_t, c_uint],
    "cuMemHostAlloc": [P(c_void_p), c_size_t, c_uint],
    "cuMemFreeHost": [c_void_p],
    "cuMemHostGetDevicePointer": [dptr_p, c_void_p, c_uint],
    "cuMemHostGetFlags": [uint_p, c_void_p],
    "cuMemHostRegister": [c_void_p, c_size_t, c_uint],
    "cuMemHostUnregister": [c_void_p],
    "cuIpcGetMemHandle": [P(CUipcMemHandle), CUdeviceptr],
    "cuIpcOpenMemHandle": [dptr_p, CUipcMemHandle, c_uint],
    "cuIpcCloseMemHandle": [CUdeviceptr],
    "cuMemAllocAsync": [dptr_p, c_size_t, handle],
    "cuMemFreeAsync": [CUdeviceptr, handle],
    "cuMemAllocFromPoolAsync": [dptr_p, c_size_t, handle, handle],
    "cuMemPoolCreate": [handle_p, P(CUmemPoolProps)],
    "cuMemPoolDestroy": [handle],
    "cuMemPoolSetAttribute": [handle, c_int, c_void_p],
    "cuMemPoolGetAttribute": [handle, c_int, c_void_p],
    "cuMemPoolTrimTo": [handle, c_size_t],
    "cuPointerGetAttribute": [c_void_p, c_int, CUdeviceptr],
    "cuMemcpy": [CUdeviceptr, CUdeviceptr, c_size_t],
    "cuMemcpyAsync": [CUdeviceptr, CUdeviceptr, c_size_t, handle],
    "cuMemcpyHtoD": [CUdeviceptr, c_void_p, c_size_t],
    "cuMemcpyDtoH": [c_void_p, CUdeviceptr, c_size_t],
    "cuMemcpyDtoD": [CUdeviceptr, CUdeviceptr, c_size_t],
    "cuMemcpyHtoDAsync": [CUdeviceptr, c_void_p, c_size_t, handle],
    "cuMemcpyDtoHAsync": [c_void_p, CUdeviceptr, c_size_t, handle],
    "cuMemcpyDtoDAsync": [CUdeviceptr, CUdeviceptr, c_size_t, handle],
    "cuMemcpyPeer": [CUdeviceptr, handle, CUdeviceptr, handle, c_size_t],
    "cuMemcpyPeerAsync": [CUdeviceptr, handle, CUdeviceptr, handle, c_size_t, handle],
    "cuMemcpy2D": [P(CUDA_MEMCPY2D)],
    "cuMemcpy2DUnaligned": [P(CUDA_MEMCPY2D)],
    "cuMemcpy2DAsync": [P(CUDA_MEMCPY2D), handle],
    "cuMemcpy3D": [P(CUDA_MEMCPY3D)],
    "cuMemcpy3DAsync": [P(CUDA_MEMCPY3D), handle],
    "cuMemcpy3DPeer": [P(CUDA_MEMCPY3D_PEER)],
    "cuMemcpy3DPeerAsync": [P(CUDA_MEMCPY3D_PEER), handle],
    "cuMemsetD8": [CUdeviceptr, c_ubyte, c_size_t],
    "cuMemsetD16": [CUdeviceptr, c_ushort, c_size_t],
    "cuMemsetD32": [CUdeviceptr, c_uint, c_size_t],
    "cuMemsetD2D8": [CUdeviceptr, c_size_t, c_ubyte, c_size_t, c_size_t],
    "cuMemsetD2D16": [CUdeviceptr, c_size_t, c_ushort, c_size_t, c_size_t],
    "cuMemsetD2D32": [CUdeviceptr, c_size_t, c_uint, c_size_t, c_size_t],
    "cuMemsetD8Async": [CUdeviceptr, c_ubyte, c_size_t, handle],
    "cuMemsetD16Async": [CUdeviceptr, c_ushort, c_size_t, handle],
    "cuMemsetD32Async": [CUdeviceptr, c_uint, c_size_t, handle],
    "cuMemsetD2D8Async": [CUdeviceptr, c_size_t, c_ubyte, c_size_t, c_size_t, handle],
    "cuMemsetD2D16Async": [CUdeviceptr, c_size_t, c_ushort, c_size_t, c_size_t, handle],
    "cuMemsetD2D32Async": [CUdeviceptr, c_size_t, c_uint, c_size_t, c_size_t, handle],
    "cuModuleLoad": [handle_p, c_char_p],
    "cuModuleLoadData": [handle_p, c_void_p],
    "cuModuleLoadDataEx": [handle_p, c_void_p, c_uint, P(c_int), P(c_void_p)],
    "cuModuleUnload": [handle],
    "cuModuleGetFunction": [handle_p, handle, c_char_p],
    "cuModuleGetGlobal": [dptr_p, size_p, handle, c_char_p],
    "cuLinkCreate": [c_uint, P(c_int), P(c_void_p), handle_p],
    "cuLinkAddData": [handle, c_int, c_void_p, c_size_t, c_char_p, c_uint, P(c_int), P(c_void_p)],
    "cuLinkAddFile": [handle, c_int, c_char_p, c_uint, P(c_int), P(c_void_p)],
    "cuLinkComplete": [handle, P(c_void_p), size_p],
    "cuLinkDestroy": [handle],
    "cuLaunchKernel": [
        handle,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        handle,
        P(c_void_p),
        P(c_void_p),
    ],
    "cuFuncGetAttribute": [int_p, c_int, handle],
    "cuFuncSetAttribute": [handle, c_int, c_int],
    "cuFuncSetCacheConfig": [handle, c_int],
    "cuFuncGetParamInfo": [handle, c_size_t, size_p, size_p],
    "cuFuncGetName": [P(c_char_p), handle],
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": [int_p, handle, c_int, c_size_t],
    "cuOccupancyMaxPotentialBlockSize": [int_p, int_p, handle, c_void_p, c_size_t, c_int],
    "cuProfilerStart": [],
    "cuProfilerStop": [],
}
PROTOTYPES.update(fakecuda_objects.PROTOTYPES)
PROTOTYPES.update(fakecuda_graphics.PROTOTYPES)
