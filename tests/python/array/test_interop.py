"""DLPack capsules and the CUDA Array Interface, without a GPU: the C structs a consumer reads
(read back here through ctypes, from the DLPack spec's layout), ownership and deleters, capsule
renaming, device mapping, stream hand-over and the protocol's argument rules. The dtype mapping:
test_interop_dtypes.py.

Arrays here are a minimal stand-in with what interop needs (shape, dtype, byte strides, ptr,
get, copy); memory comes from the fake driver where a device is needed."""

import ctypes
import gc
import sys

import numpy as np
import pytest

from cuplug import _core
from cuplug._array import interop

dl = _core._dlpack


# {{{ the DLPack structs, restated from the spec for reading capsules


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))),
]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]

_api = ctypes.pythonapi
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


def capsule_name(capsule):
    return _api.PyCapsule_GetName(capsule).decode()


def managed(capsule, versioned=True):
    name = capsule_name(capsule).encode()
    kind = DLManagedTensorVersioned if versioned else DLManagedTensor
    return ctypes.cast(_api.PyCapsule_GetPointer(capsule, name), ctypes.POINTER(kind)).contents


def tensor_fields(t):
    shape = tuple(t.shape[k] for k in range(t.ndim))
    strides = tuple(t.strides[k] for k in range(t.ndim))
    return {
        "data": t.data or 0,
        "device": (t.device.device_type, t.device.device_id),
        "dtype": (t.dtype.code, t.dtype.bits, t.dtype.lanes),
        "shape": shape,
        "strides": strides,
        "byte_offset": t.byte_offset,
    }


class Owner:
    """Stands for the exporting array: its reference count shows who keeps it alive."""


def export(
    owner=None,
    ptr=0x7000,
    shape=(2, 3),
    strides=(3, 1),
    dtype=(2, 32, 1),
    device=(2, 0),
    versioned=True,
    flags=0,
):
    return dl.export_capsule(
        owner if owner is not None else Owner(),
        ptr,
        shape,
        strides,
        dtype,
        device,
        versioned,
        flags,
    )


# }}}

# {{{ exporting


def test_struct_sizes_match_the_spec():
    # What the C++ static_asserts freeze, seen from the consumer's side.
    assert ctypes.sizeof(DLTensor) == 48
    assert ctypes.sizeof(DLManagedTensor) == 64
    assert ctypes.sizeof(DLManagedTensorVersioned) == 80
    assert DLManagedTensorVersioned.dl_tensor.offset == 32


def test_versioned_capsule_carries_version_flags_and_tensor():
    capsule = export(shape=(2, 3), strides=(1, 2), flags=dl.FLAG_IS_COPIED)
    assert capsule_name(capsule) == "dltensor_versioned"
    m = managed(capsule)
    assert (m.version.major, m.version.minor) == interop.DLPACK_VERSION == (1, 1)
    assert m.flags == dl.FLAG_IS_COPIED
    assert bool(m.deleter)
    assert tensor_fields(m.dl_tensor) == {
        "data": 0x7000,
        "device": (2, 0),
        "dtype": (2, 32, 1),
        "shape": (2, 3),
        "strides": (1, 2),
        "byte_offset": 0,
    }


def test_legacy_capsule_for_consumers_without_max_version():
    capsule = export(versioned=False, shape=(4,), strides=(1,), dtype=(0, 64, 1))
    assert capsule_name(capsule) == "dltensor"
    t = managed(capsule, versioned=False).dl_tensor
    assert tensor_fields(t)["shape"] == (4,) and tensor_fields(t)["dtype"] == (0, 64, 1)
    with pytest.raises(ValueError, match="versioned capsule"):
        export(versioned=False, flags=dl.FLAG_READ_ONLY)


def test_zero_dimensional_tensor_has_shape_and_strides_pointers():
    t = managed(export(shape=(), strides=())).dl_tensor
    assert t.ndim == 0
    assert bool(t.shape) and bool(t.strides)  # never null, some consumers read them anyway


def test_shape_and_strides_must_agree():
    with pytest.raises(ValueError, match="2 extents but 1 strides"):
        export(shape=(2, 3), strides=(1,))


def test_unconsumed_capsule_releases_the_exporter():
    owner = Owner()
    before = sys.getrefcount(owner)
    capsule = export(owner)
    assert sys.getrefcount(owner) == before + 1
    del capsule
    gc.collect()
    assert sys.getrefcount(owner) == before


def test_consumer_calls_the_deleter_once_and_the_capsule_then_leaves_it_alone():
    owner = Owner()
    before = sys.getrefcount(owner)
    capsule = export(owner)
    m = managed(capsule)
    # What a consumer does: rename (taking ownership), use, call the deleter when done.
    assert _api.PyCapsule_SetName(capsule, b"used_dltensor_versioned") == 0
    assert sys.getrefcount(owner) == before + 1
    m.deleter(ctypes.pointer(m))
    assert sys.getrefcount(owner) == before
    del capsule  # the renamed capsule must not call the deleter a second time
    gc.collect()
    assert sys.getrefcount(owner) == before


# }}}

# {{{ importing


def test_import_takes_ownership_and_releases_at_the_end():
    owner = Owner()
    before = sys.getrefcount(owner)
    capsule = export(owner, ptr=0x9000, shape=(3, 5), strides=(5, 1), dtype=(5, 64, 1))
    t = dl.Imported(capsule)
    assert capsule_name(capsule) == "used_dltensor_versioned"
    assert t.versioned and t.alive
    assert (t.ptr, t.shape, t.strides, t.dtype, t.device) == (
        0x9000,
        (3, 5),
        (5, 1),
        (5, 64, 1),
        (2, 0),
    )
    assert int(t) == 0x9000
    del capsule
    gc.collect()
    assert sys.getrefcount(owner) == before + 1  # the import keeps the exporter alive
    del t
    gc.collect()
    assert sys.getrefcount(owner) == before


def test_import_release_is_explicit_and_once():
    owner = Owner()
    before = sys.getrefcount(owner)
    t = dl.Imported(export(owner, versioned=False))
    assert not t.versioned
    t.release()
    assert sys.getrefcount(owner) == before and not t.alive
    t.release()  # a second release does nothing
    with pytest.raises(ValueError, match="released"):
        t.ptr  # noqa: B018


def test_a_capsule_is_consumed_only_once():
    capsule = export()
    first = dl.Imported(capsule)
    with pytest.raises(ValueError, match="already consumed"):
        dl.Imported(capsule)
    assert first.alive


def test_import_refuses_other_capsules():
    import datetime

    with pytest.raises(ValueError, match="not a DLPack capsule"):
        dl.Imported(datetime.datetime_CAPI)


def test_import_of_a_future_major_version_calls_the_deleter_and_refuses():
    owner = Owner()
    before = sys.getrefcount(owner)
    capsule = export(owner)
    managed(capsule).version.major = 2
    with pytest.raises(BufferError, match="ABI version 2.1, cuplug reads 1.x"):
        dl.Imported(capsule)
    gc.collect()
    assert sys.getrefcount(owner) == before
    assert capsule_name(capsule) == "used_dltensor_versioned"


def test_byte_offset_is_added_to_the_pointer():
    capsule = export(ptr=0x1000)
    managed(capsule).dl_tensor.byte_offset = 64
    assert dl.Imported(capsule).ptr == 0x1040


def test_null_strides_read_as_c_order():
    capsule = export(versioned=False, shape=(2, 3), strides=(3, 1))
    managed(capsule, versioned=False).dl_tensor.strides = None
    assert dl.Imported(capsule).strides is None
    assert interop._c_strides((2, 3), 4) == (12, 4)


def test_negative_extent_is_refused():
    capsule = export(shape=(2,), strides=(1,))
    managed(capsule).dl_tensor.shape[0] = -1
    with pytest.raises(BufferError, match="negative extent"):
        dl.Imported(capsule)


# }}}

# {{{ the protocols over a minimal array


class MiniArray(interop.ArrayInterop):
    """What interop needs of an array, over memory it is given."""

    def __init__(self, host, ptr, strides=None):
        self.host = host
        self.shape = host.shape
        self.dtype = host.dtype
        self.strides = strides if strides is not None else host.strides
        self.size = host.size
        self.ptr = ptr
        self.copies = 0

    def get(self):
        return self.host.copy()

    def copy(self):
        self.copies += 1
        return MiniArray(self.host, self.ptr + 0x100000, self.strides)


def test_cuda_array_interface_v3():
    a = MiniArray(np.zeros((4, 5), np.float32), 0x5000)
    cai = a.__cuda_array_interface__
    assert cai == {
        "shape": (4, 5),
        "typestr": "<f4",
        "descr": [("", "<f4")],
        "data": (0x5000, False),
        "strides": (20, 4),  # the tuple for a C-contiguous array too, as PyCUDA gives it
        "stream": None,  # the legacy default stream, as PyCUDA gives it (its test_gpuarray_cai)
        "version": 3,
    }
    strided = MiniArray(np.zeros((4, 5), np.float32), 0x5000, strides=(40, 8))
    assert strided.__cuda_array_interface__["strides"] == (40, 8)
    empty = MiniArray(np.zeros((0, 3), np.float64), 0x5000)
    assert empty.__cuda_array_interface__["data"] == (0, False)


def test_cuda_array_interface_names_the_arrays_stream():
    a = MiniArray(np.zeros(3, np.float32), 0x5000)
    a._stream = 0xABC0
    assert a.__cuda_array_interface__["stream"] == 0xABC0


def test_numpy_conversion_copies():
    host = np.arange(6, dtype=np.int16).reshape(2, 3)
    a = MiniArray(host, 0x5000)
    out = np.asarray(a)
    assert np.array_equal(out, host) and out is not host
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="without a copy"):
        a.__array__(copy=False)


def test_dlpack_argument_rules():
    a = MiniArray(np.zeros(3, np.float32), 0x5000)
    with pytest.raises(ValueError, match=r"stream=0\) is ambiguous"):
        a.__dlpack__(stream=0)
    with pytest.raises(TypeError, match="max_version must be"):
        a.__dlpack__(max_version=3)
    with pytest.raises(TypeError, match="copy must be"):
        interop.dlpack(a, copy="yes", dl_device=None, stream=-1)


@pytest.mark.gpu
def test_dlpack_export_of_device_memory(ctx):
    import cuplug.driver as drv

    mem = drv.mem_alloc(4 * 12)
    a = MiniArray(np.zeros((3, 4), np.float32), int(mem), strides=(4, 12))
    assert a.__dlpack_device__() == (interop.kDLCUDA, 0)
    capsule = a.__dlpack__(max_version=(1, 0), stream=-1)
    t = tensor_fields(managed(capsule).dl_tensor)
    assert t["data"] == int(mem) and t["device"] == (2, 0)
    assert t["shape"] == (3, 4) and t["strides"] == (1, 3)  # bytes / itemsize
    assert managed(capsule).flags == 0
    legacy = a.__dlpack__(stream=-1)  # no max_version: an old consumer
    assert capsule_name(legacy) == "dltensor"


@pytest.mark.gpu
def test_dlpack_copy_true_exports_a_copy_flagged_as_such(ctx):
    import cuplug.driver as drv

    mem = drv.mem_alloc(16)
    a = MiniArray(np.zeros(4, np.float32), int(mem))
    capsule = a.__dlpack__(max_version=(1, 0), copy=True, stream=-1)
    assert a.copies == 1
    assert managed(capsule).flags == dl.FLAG_IS_COPIED
    assert managed(capsule).dl_tensor.data == int(mem) + 0x100000  # the copy's memory


@pytest.mark.gpu
def test_dlpack_to_the_cpu_is_a_host_copy(ctx):
    import cuplug.driver as drv

    host = np.arange(6, dtype=np.float64).reshape(2, 3)
    mem = drv.mem_alloc(host.nbytes)
    a = MiniArray(host, int(mem))
    capsule = a.__dlpack__(max_version=(1, 0), dl_device=(interop.kDLCPU, 0))
    m = managed(capsule)
    assert m.dl_tensor.device.device_type == interop.kDLCPU
    assert m.flags == dl.FLAG_IS_COPIED
    with pytest.raises(BufferError, match="copy=False forbids"):
        a.__dlpack__(dl_device=(interop.kDLCPU, 0), copy=False)
    with pytest.raises(BufferError, match="cannot export to device CUDA:3"):
        a.__dlpack__(dl_device=(interop.kDLCUDA, 3))
    # NumPy as the consumer asks for the CPU and gets the values.
    back = np.from_dlpack(a, device="cpu")
    assert np.array_equal(back, host)


@pytest.mark.gpu
def test_stream_hand_over_waits_only_across_streams(ctx, fake):
    import cuplug.driver as drv

    mem = drv.mem_alloc(16)
    a = MiniArray(np.zeros(4, np.float32), int(mem))
    # Consumer on the legacy default stream (None or 1), producer too: nothing to do.
    fake.fail_next("cuEventCreate", 999)
    a.__dlpack__(stream=1)
    a.__dlpack__(stream=None)
    dl.stream_wait(0, 1)
    fake.clear_faults()
    # Another stream: an event recorded on the producer's, waited on by the consumer's.
    s = drv.Stream()
    fake.fail_next("cuStreamWaitEvent", 1)  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(drv.LogicError, match="cuStreamWaitEvent"):
        a.__dlpack__(stream=s.handle)
    a.__dlpack__(stream=s.handle)
    a._stream = s
    a.__dlpack__(stream=s.handle)  # producer's stream is the consumer's: nothing to wait for
    assert interop.array_stream(a) == s.handle


@pytest.mark.gpu
def test_cuda_array_interface_finishes_legacy_stream_work_before_it_says_none(ctx, fake):
    import cuplug.driver as drv

    CUDA_ERROR_NOT_READY = 600
    mem = drv.mem_alloc(16)
    a = MiniArray(np.zeros(4, np.float32), int(mem))
    fake.fail_next("cuStreamSynchronize", 1)  # armed: shows whether the export waits
    assert a.__cuda_array_interface__["stream"] is None  # idle: no wait, PyCUDA's None
    fake.fail_next("cuStreamQuery", CUDA_ERROR_NOT_READY)
    with pytest.raises(drv.LogicError, match="cuStreamSynchronize"):
        _ = a.__cuda_array_interface__  # work in flight: the export waits for it
    fake.clear_faults()
    fake.fail_next("cuStreamQuery", CUDA_ERROR_NOT_READY)
    assert a.__cuda_array_interface__["stream"] is None  # ... then says None
    fake.fail_next("cuStreamQuery", 1)  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(drv.LogicError, match="cuStreamQuery"):
        _ = a.__cuda_array_interface__
    s = drv.Stream()
    a._stream = s
    assert a.__cuda_array_interface__["stream"] == s.handle  # the consumer waits, not the host


def test_stream_handles():
    assert interop.stream_handle(None) == 0
    assert interop.stream_handle(0x1234) == 0x1234

    class Foreign:
        def __cuda_stream__(self):
            return (0, 0x4321)

    assert interop.stream_handle(Foreign()) == 0x4321
    with pytest.raises(TypeError, match="as a stream"):
        interop.stream_handle("stream")


# }}}
