"""Issue 26, part A: foreign arrays on the fake driver. CUDA Array Interface fields are
validated, not coerced; DLPack capsules with a NULL shape, a wrapping byte_offset or an IEEE
float128 are refused; a refused capsule's deleter still runs; foreign pointers the driver does
not know, null pointers for non-empty arrays and shapes or strides reaching outside the
producer's allocation are refused instead of faulting at use (or landing in a fresh
allocation the producer never sees)."""

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


def test_a_capsule_refused_after_import_is_handed_back_too(env):
    owner = Owner()
    before = sys.getrefcount(owner)
    with pytest.raises(BufferError, match="knows no memory"):
        interop.from_dlpack(Producer(capsule(owner, 8, (4,))))
    gc.collect()
    assert sys.getrefcount(owner) == before


def test_dlpack_ieee_float128_is_refused_both_ways(env):
    with pytest.raises(BufferError, match="binary128"):
        interop.numpy_dtype(2, 128, 1)  # not NumPy's x87 float128
    if hasattr(np, "float128"):
        with pytest.raises(BufferError, match="long double"):
            interop.dlpack_dtype(np.float128)
    assert interop.numpy_dtype(5, 128, 1) == np.complex128


# }}}

# {{{ foreign pointers


@pytest.mark.parametrize("protocol", ["dlpack", "cai"])
def test_a_null_pointer_for_a_non_empty_array_is_refused(env, protocol):
    if protocol == "dlpack":
        producer = Producer(capsule(Owner(), 0, (4,)))
        convert = interop.from_dlpack
    else:
        producer = cai(0)
        convert = interop.from_cuda_array_interface
    before = env.live_allocations()
    with pytest.raises(BufferError, match="null data pointer"):
        convert(producer)
    assert env.live_allocations() == before  # no fresh allocation stands in for the data


@pytest.mark.parametrize("protocol", ["dlpack", "cai"])
def test_pointers_the_driver_does_not_know_are_refused(env, protocol):
    for ptr in (8, 0xDEAD0000):
        with pytest.raises(BufferError, match="knows no memory"):
            if protocol == "dlpack":
                interop.from_dlpack(Producer(capsule(Owner(), ptr, (4,))))
            else:
                interop.from_cuda_array_interface(cai(ptr))


def test_freed_foreign_memory_is_refused(env):
    mem = drv.mem_alloc(64)
    ptr = int(mem)
    mem.free()
    with pytest.raises(BufferError, match="knows no memory"):
        interop.from_cuda_array_interface(cai(ptr))


@pytest.mark.parametrize(
    "shape, strides, offset",
    [((17,), None, 0), ((4,), (-4,), 0), ((4,), (4,), 60), ((2, 2), (64, 4), 0)],
)
def test_layouts_reaching_outside_the_producers_allocation_are_refused(env, shape, strides, offset):
    mem = drv.mem_alloc(64)
    with pytest.raises(BufferError, match="outside its allocation"):
        interop.from_cuda_array_interface(cai(int(mem) + offset, shape, strides=strides))
    el = None if strides is None else tuple(s // 4 for s in strides)
    with pytest.raises(BufferError, match="outside its allocation"):
        interop.from_dlpack(Producer(capsule(Owner(), int(mem) + offset, shape, el)))


def test_foreign_layouts_inside_the_allocation_are_accepted(env):
    mem = drv.mem_alloc(64)
    a = interop.from_cuda_array_interface(cai(int(mem) + 60, (4,), strides=(-4,)))
    assert a.ptr == int(mem) + 60 and a.strides == (-4,)
    b = interop.from_dlpack(Producer(capsule(Owner(), int(mem), (4, 4))))
    assert b.shape == (4, 4) and b.ptr == int(mem)


@pytest.mark.parametrize("protocol", ["dlpack", "cai"])
def test_shapes_whose_size_wraps_are_refused(env, protocol):
    mem = drv.mem_alloc(64)
    with pytest.raises(ValueError, match="array is too big"):
        if protocol == "dlpack":
            interop.from_dlpack(Producer(capsule(Owner(), int(mem), (2**40, 2**40))))
        else:
            interop.from_cuda_array_interface(cai(int(mem), (2**40, 2**40)))


# }}}

# {{{ CUDA Array Interface fields


@pytest.mark.parametrize(
    "field, value, error, message",
    [
        ("shape", "44", TypeError, r"\['shape'\] must be a tuple of ints"),
        ("shape", (4.5,), TypeError, r"\['shape'\] entry must be an int"),
        ("shape", (True,), TypeError, r"\['shape'\] entry must be an int"),
        ("shape", (-4,), ValueError, "negative extent"),
        ("strides", "4", TypeError, r"\['strides'\] must be a tuple of ints"),
        ("strides", (4.0,), TypeError, r"\['strides'\] entry must be an int"),
        ("strides", (4, 4), ValueError, "2 entries for 1 dimensions"),
        ("stream", 1.5, TypeError, r"\['stream'\] must be an int"),
        ("stream", 0, ValueError, "stream 0, which the protocol forbids"),
        ("stream", 2**63, ValueError, "not a CUDA stream handle"),
        ("stream", 2**64 - 1, ValueError, "not a CUDA stream handle"),
        ("stream", -1, ValueError, "not a CUDA stream handle"),
        ("version", 4, ValueError, "versions 0 to 3"),
        ("version", -1, ValueError, "versions 0 to 3"),
        ("version", 3.5, TypeError, r"\['version'\] must be an int"),
        ("version", "garbage", TypeError, r"\['version'\] must be an int"),
        ("data", (1.5, False), TypeError, r"\['data'\]\[0\] must be an int"),
        ("data", 123, TypeError, r"must be a \(pointer, read_only\) pair"),
        ("typestr", 4, TypeError, r"\['typestr'\] must be a str"),
    ],
    ids=lambda v: repr(v)[:20],
)
def test_cai_fields_are_validated_not_coerced(env, field, value, error, message):
    mem = drv.mem_alloc(64)
    obj = cai(int(mem))
    obj.__cuda_array_interface__[field] = value
    with pytest.raises(error, match=message):
        interop.from_cuda_array_interface(obj)
    assert env.launch_count() == 0


def test_cai_without_a_required_field_is_refused(env):
    obj = cai(0x1000)
    del obj.__cuda_array_interface__["data"]
    with pytest.raises(ValueError, match="no 'data' entry"):
        interop.from_cuda_array_interface(obj)


def test_valid_cai_streams_and_versions_are_accepted(env):
    mem = drv.mem_alloc(64)
    for version, stream in ((3, None), (3, 1), (3, 2), (2, 0), (0, "ignored before v3")):
        obj = cai(int(mem), version=version, stream=stream)
        assert interop.from_cuda_array_interface(obj).ptr == int(mem)
    assert interop.from_cuda_array_interface(cai(int(mem), shape=[2, 2])).shape == (2, 2)
    assert interop.from_cuda_array_interface(cai(int(mem), shape=(np.int64(4),))).size == 4


# }}}
