"""Issue 26, part A: foreign arrays on the fake driver. DLPack capsules with a NULL shape or a
wrapping byte_offset are refused, and a refused capsule's deleter still runs."""

from __future__ import annotations

import ctypes
import gc
import sys

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug import _core
from cuplug._array import interop

pytestmark = pytest.mark.gpu

dl = _core._dlpack
kDLCUDA = 2


@pytest.fixture
def env(ctx, fake):
    fake.clear_launches()
    yield fake
    gc.collect()


# {{{ the DLPack structs (the spec's layout), to damage capsules on purpose


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", ctypes.c_int32 * 2),
        ("ndim", ctypes.c_int32),
        ("dtype", ctypes.c_uint8 * 4),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class Versioned(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint32 * 2),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_api = ctypes.pythonapi
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def tensor_of(capsule) -> DLTensor:
    p = _api.PyCapsule_GetPointer(capsule, b"dltensor_versioned")
    return ctypes.cast(p, ctypes.POINTER(Versioned)).contents.dl_tensor


class Owner:
    """Stands for the producer's tensor: its reference count shows whether the deleter ran."""


def capsule(owner, ptr, shape, strides=None, dtype=(2, 32, 1)):
    if strides is None:
        strides = tuple(int(np.prod(shape[k + 1 :])) for k in range(len(shape)))
    return dl.export_capsule(owner, ptr, tuple(shape), tuple(strides), dtype, (kDLCUDA, 0), True)


class Producer:
    """A __dlpack__ producer handing out a prepared capsule."""

    def __init__(self, cap):
        self.cap = cap

    def __dlpack__(self, stream=None, max_version=None):
        return self.cap

    def __dlpack_device__(self):
        return (kDLCUDA, 0)


class CAI:
    def __init__(self, **fields):
        self.__cuda_array_interface__ = fields


def cai(ptr, shape=(4,), typestr="<f4", **extra):
    fields = {"shape": shape, "typestr": typestr, "data": (ptr, False), "version": 3}
    fields.update(extra)
    return CAI(**fields)


# }}}

# {{{ item 7 and the deleter


def test_dlpack_ndim_without_a_shape_array_is_refused(env):
    mem = drv.mem_alloc(64)
    owner = Owner()
    before = sys.getrefcount(owner)
    cap = capsule(owner, int(mem), (4,))
    tensor_of(cap).shape = None  # ndim 1, shape NULL: read, this was a segfault
    with pytest.raises(BufferError, match="no shape array"):
        interop.from_dlpack(Producer(cap))
    gc.collect()
    assert sys.getrefcount(owner) == before  # the deleter ran


@pytest.mark.parametrize("damage", ["negative extent", "ndim", "byte_offset"])
def test_a_refused_capsule_is_handed_back_through_its_deleter(env, damage):
    mem = drv.mem_alloc(64)
    owner = Owner()
    before = sys.getrefcount(owner)
    cap = capsule(owner, int(mem), (4,))
    t = tensor_of(cap)
    if damage == "negative extent":
        t.shape[0] = -1
    elif damage == "ndim":
        t.ndim = 65
    else:
        t.byte_offset = 2**64 - 8  # data + offset wraps to below data
    with pytest.raises(BufferError):
        dl.Imported(cap)
    gc.collect()
    assert sys.getrefcount(owner) == before


# }}}
