"""ctypes structs and prototypes of the driver's array, texture / surface object and graph entry
points, for fakecuda.PROTOTYPES (kept apart so fakecuda.py stays small)."""

from __future__ import annotations

import ctypes
from ctypes import POINTER as P
from ctypes import Structure, Union, c_char_p, c_float, c_int, c_size_t, c_uint, c_uint64, c_void_p

CUdeviceptr = c_uint64
handle = c_void_p
handle_p = P(handle)


class CUDA_ARRAY_DESCRIPTOR(Structure):
    _fields_ = [
        ("Width", c_size_t),
        ("Height", c_size_t),
        ("Format", c_int),
        ("NumChannels", c_uint),
    ]


class CUDA_ARRAY3D_DESCRIPTOR(Structure):
    _fields_ = [
        ("Width", c_size_t),
        ("Height", c_size_t),
        ("Depth", c_size_t),
        ("Format", c_int),
        ("NumChannels", c_uint),
        ("Flags", c_uint),
    ]


class _Linear(Structure):
    _fields_ = [
        ("devPtr", CUdeviceptr),
        ("format", c_int),
        ("numChannels", c_uint),
        ("sizeInBytes", c_size_t),
    ]


class _Pitch2D(Structure):
    _fields_ = [
        ("devPtr", CUdeviceptr),
        ("format", c_int),
        ("numChannels", c_uint),
        ("width", c_size_t),
        ("height", c_size_t),
        ("pitchInBytes", c_size_t),
    ]


class _Resource(Union):
    _fields_ = [
        ("hArray", c_void_p),
        ("linear", _Linear),
        ("pitch2D", _Pitch2D),
        ("reserved", c_int * 32),
    ]


class CUDA_RESOURCE_DESC(Structure):
    _fields_ = [("resType", c_int), ("res", _Resource), ("flags", c_uint)]


class CUDA_TEXTURE_DESC(Structure):
    _fields_ = [
        ("addressMode", c_int * 3),
        ("filterMode", c_int),
        ("flags", c_uint),
        ("maxAnisotropy", c_uint),
        ("mipmapFilterMode", c_int),
        ("mipmapLevelBias", c_float),
        ("minMipmapLevelClamp", c_float),
        ("maxMipmapLevelClamp", c_float),
        ("borderColor", c_float * 4),
        ("reserved", c_int * 12),
    ]


class CUDA_KERNEL_NODE_PARAMS(Structure):
    _fields_ = [
        ("func", handle),
        ("gridDimX", c_uint),
        ("gridDimY", c_uint),
        ("gridDimZ", c_uint),
        ("blockDimX", c_uint),
        ("blockDimY", c_uint),
        ("blockDimZ", c_uint),
        ("sharedMemBytes", c_uint),
        ("kernelParams", P(c_void_p)),
        ("extra", P(c_void_p)),
        ("kern", handle),
        ("ctx", handle),
    ]


class CUDA_MEMSET_NODE_PARAMS(Structure):
    _fields_ = [
        ("dst", CUdeviceptr),
        ("pitch", c_size_t),
        ("value", c_uint),
        ("elementSize", c_uint),
        ("width", c_size_t),
        ("height", c_size_t),
    ]


HOST_FN = ctypes.CFUNCTYPE(None, c_void_p)


class CUDA_HOST_NODE_PARAMS(Structure):
    _fields_ = [("fn", HOST_FN), ("userData", c_void_p)]


class CUgraphExecUpdateResultInfo(Structure):
    _fields_ = [("result", c_int), ("errorNode", handle), ("errorFromNode", handle)]


class CUlaunchAttribute(Structure):
    _fields_ = [("id", c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_ubyte * 64)]


class CUlaunchConfig(Structure):
    _fields_ = [
        ("gridDimX", c_uint),
        ("gridDimY", c_uint),
        ("gridDimZ", c_uint),
        ("blockDimX", c_uint),
        ("blockDimY", c_uint),
        ("blockDimZ", c_uint),
        ("sharedMemBytes", c_uint),
        ("hStream", handle),
        ("attrs", P(CUlaunchAttribute)),
        ("numAttrs", c_uint),
    ]


CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
CU_RESOURCE_TYPE_ARRAY = 0
CU_RESOURCE_TYPE_LINEAR = 2
CU_RESOURCE_TYPE_PITCH2D = 3
CU_AD_FORMAT_UNSIGNED_INT8 = 0x01
CU_AD_FORMAT_FLOAT = 0x20
CUDA_ARRAY3D_LAYERED = 0x01
CUDA_ARRAY3D_SURFACE_LDST = 0x02

PROTOTYPES = {
    "cuArrayCreate": [handle_p, P(CUDA_ARRAY_DESCRIPTOR)],
    "cuArrayGetDescriptor": [P(CUDA_ARRAY_DESCRIPTOR), handle],
    "cuArray3DCreate": [handle_p, P(CUDA_ARRAY3D_DESCRIPTOR)],
    "cuArray3DGetDescriptor": [P(CUDA_ARRAY3D_DESCRIPTOR), handle],
    "cuArrayDestroy": [handle],
    "cuMemcpyHtoA": [handle, c_size_t, c_void_p, c_size_t],
    "cuMemcpyAtoH": [c_void_p, handle, c_size_t, c_size_t],
    "cuMemcpyAtoD": [CUdeviceptr, handle, c_size_t, c_size_t],
    "cuMemcpyDtoA": [handle, c_size_t, CUdeviceptr, c_size_t],
    "cuMemcpyAtoA": [handle, c_size_t, handle, c_size_t, c_size_t],
    "cuMemcpyHtoAAsync": [handle, c_size_t, c_void_p, c_size_t, handle],
    "cuMemcpyAtoHAsync": [c_void_p, handle, c_size_t, c_size_t, handle],
    "cuTexObjectCreate": [
        P(c_uint64),
        P(CUDA_RESOURCE_DESC),
        P(CUDA_TEXTURE_DESC),
        c_void_p,
    ],
    "cuTexObjectDestroy": [c_uint64],
    "cuTexObjectGetResourceDesc": [P(CUDA_RESOURCE_DESC), c_uint64],
    "cuSurfObjectCreate": [P(c_uint64), P(CUDA_RESOURCE_DESC)],
    "cuSurfObjectDestroy": [c_uint64],
    "cuStreamBeginCapture": [handle, c_int],
    "cuStreamEndCapture": [handle, handle_p],
    "cuStreamIsCapturing": [handle, P(c_int)],
    "cuStreamGetCaptureInfo": [
        handle,
        P(c_int),
        P(c_uint64),
        handle_p,
        P(P(handle)),
        P(c_void_p),
        P(c_size_t),
    ],
    "cuGraphCreate": [handle_p, c_uint],
    "cuGraphDestroy": [handle],
    "cuGraphClone": [handle_p, handle],
    "cuGraphAddKernelNode": [handle_p, handle, P(handle), c_size_t, P(CUDA_KERNEL_NODE_PARAMS)],
    "cuGraphAddMemcpyNode": [handle_p, handle, P(handle), c_size_t, c_void_p, handle],
    "cuGraphAddMemsetNode": [
        handle_p,
        handle,
        P(handle),
        c_size_t,
        P(CUDA_MEMSET_NODE_PARAMS),
        handle,
    ],
    "cuGraphAddHostNode": [handle_p, handle, P(handle), c_size_t, P(CUDA_HOST_NODE_PARAMS)],
    "cuGraphAddEmptyNode": [handle_p, handle, P(handle), c_size_t],
    "cuGraphAddChildGraphNode": [handle_p, handle, P(handle), c_size_t, handle],
    "cuGraphAddDependencies": [handle, P(handle), P(handle), c_void_p, c_size_t],
    "cuGraphGetNodes": [handle, P(handle), P(c_size_t)],
    "cuGraphGetRootNodes": [handle, P(handle), P(c_size_t)],
    "cuGraphNodeGetType": [handle, P(c_int)],
    "cuGraphKernelNodeGetParams": [handle, P(CUDA_KERNEL_NODE_PARAMS)],
    "cuGraphKernelNodeSetParams": [handle, P(CUDA_KERNEL_NODE_PARAMS)],
    "cuGraphDebugDotPrint": [handle, c_char_p, c_uint],
    "cuGraphInstantiateWithFlags": [handle_p, handle, c_uint64],
    "cuGraphExecDestroy": [handle],
    "cuGraphLaunch": [handle, handle],
    "cuGraphUpload": [handle, handle],
    "cuGraphExecUpdate": [handle, handle, P(CUgraphExecUpdateResultInfo)],
    "cuGraphExecKernelNodeSetParams": [handle, handle, P(CUDA_KERNEL_NODE_PARAMS)],
    "cuLaunchKernelEx": [c_void_p, handle, P(c_void_p), P(c_void_p)],
}
