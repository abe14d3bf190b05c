"""GPUArray <-> other libraries without copies: DLPack, the CUDA Array Interface, NumPy.

Exporting (GPUArray's ``__dlpack__``, ``__dlpack_device__``, ``__cuda_array_interface__``,
``__array__``; :class:`ArrayInterop` carries them) and importing (:func:`from_dlpack`,
:func:`asarray`) need of an array only ``shape``, ``dtype``, ``strides`` (bytes), ``ptr``,
``get()`` and ``copy()``, and of ``cuplug.gpuarray`` the ``GPUArray(shape, dtype,
gpudata=, strides=, base=)`` constructor and ``to_gpu``.

Streams: cuplug's operations run on the stream they are given (None: the legacy default
stream). An exported array names that stream (``stream`` of the CUDA Array Interface) or makes
the consumer's stream wait for it (``__dlpack__(stream=...)``) with an event, never blocking the
host; an import makes the importing stream wait for the producer's the same way.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

import numpy as np

from .. import _core

# The DLPack codes and the dtype mapping live in dlpack_types.py; importable from here as before.
from .dlpack_types import (  # noqa: F401 - kDLCUDAHost, kDLCUDAManaged: re-exported
    _CUDA_READABLE,
    _DEVICE_NAMES,
    dlpack_dtype,
    kDLCPU,
    kDLCUDA,
    kDLCUDAHost,
    kDLCUDAManaged,
    numpy_dtype,
)
from .foreign import c_strides as _c_strides
from .foreign import parse_cai, wrap_foreign
from .transfers import to_gpu

if TYPE_CHECKING:
    from .core import GPUArray

_dl = _core._dlpack

# The newest DLPack ABI this module speaks.
DLPACK_VERSION = (_dl.MAJOR_VERSION, _dl.MINOR_VERSION)

# DLPack and CUDA Array Interface stream values for the legacy default stream.
_LEGACY_STREAM = 1


def stream_handle(stream) -> int:
    """The CUstream of None (0, the legacy default), a Stream, an int handle or an object with
    ``__cuda_stream__``."""
    return _dl.stream_handle(stream)


def _protocol_stream(handle: int) -> int:
    """A CUstream as DLPack and the CUDA Array Interface write it (0 is not allowed there)."""
    return _LEGACY_STREAM if handle == 0 else handle


def array_stream(array) -> int:
    """The stream handle of the array's pending work: the stream its last operation ran on where
    the array records one (``_stream``), else the legacy default stream."""
    return stream_handle(getattr(array, "_stream", None))


def _byte_strides(array) -> tuple[int, ...]:
    return tuple(int(s) for s in array.strides)


def _ptr(array) -> int:
    return 0 if array.size == 0 else int(array.ptr or 0)


# {{{ export


def _export_stream(array):
    handle = array_stream(array)
    if handle:
        return _protocol_stream(handle)
    # Legacy-stream work: finished here, so that None ("no synchronization needed") is true for
    # every consumer, CU_STREAM_NON_BLOCKING streams included. An idle stream costs one query.
    _dl.stream_settle(None)
    return None


def cuda_array_interface(array) -> dict:
    """Version 3 of the CUDA Array Interface: ``stream`` is the stream the consumer must order
    its work after. For an array whose last work ran on the legacy default stream it is None, as
    PyCUDA gives it (PyCUDA's test_gpuarray_cai asserts it), and the protocol's "no
    synchronization needed" is made true first: work still in flight on the legacy stream is
    waited for (a consumer on a CU_STREAM_NON_BLOCKING stream would otherwise read before a
    pending write lands; even to_gpu's copy from pageable memory may still be in flight)."""
    dtype = array.dtype
    shape = tuple(int(n) for n in array.shape)
    strides = _byte_strides(array)
    return {
        "shape": shape,
        "typestr": dtype.str,
        "descr": dtype.descr if dtype.fields is not None else [("", dtype.str)],
        "data": (_ptr(array), False),
        # The tuple, as PyCUDA gives it (code built on PyCUDA reads it; the protocol allows it
        # for contiguous arrays too), except for an empty array: its data pointer is null, and
        # CuPy wraps a null pointer with strides as foreign memory it cannot place on a device
        # ("UnownedMemory requires explicit device ID"), where None gives an empty array.
        "strides": strides if array.size != 0 else None,
        "stream": _export_stream(array),
        "version": 3,
    }


def dlpack_device(array) -> tuple[int, int]:
    """(kDLCUDA, device ordinal) of the array's memory. Managed memory is kDLCUDA too (usable
    as device memory there; consumers that do not know kDLCUDAManaged still take it)."""
    ordinal, _managed = _dl.pointer_device(_ptr(array))
    return kDLCUDA, int(ordinal)


def _check_dl_device(dl_device, own) -> bool:
    """True when dl_device asks for the host (a copy), False for the array's own device."""
    try:
        device_type, device_id = (int(v) for v in dl_device)
    except (TypeError, ValueError):
        raise TypeError(
            f"dl_device must be a (device_type, device_id) pair, got {dl_device!r}"
        ) from None
    if (device_type, device_id) == own:
        return False
    if device_type == kDLCPU:
        return True
    raise BufferError(
        f"cannot export to device {_DEVICE_NAMES.get(device_type, device_type)}:{device_id}; "
        f"the array lives on CUDA:{own[1]} (the CPU, by copy, is the only other choice)"
    )


def _wants_versioned(max_version) -> bool:
    if max_version is None:
        return False
    try:
        major = int(max_version[0])
    except (TypeError, ValueError, IndexError):
        raise TypeError(f"max_version must be a (major, minor) pair, got {max_version!r}") from None
    return major >= 1


def dlpack(array, *, stream=None, max_version=None, dl_device=None, copy=None):
    """``__dlpack__``: a capsule over the array's memory (zero-copy unless copy=True or
    dl_device is the CPU). stream: the consumer's stream (None or 1: legacy default, 2:
    per-thread default, other ints: a CUstream, -1: no ordering); it is made to wait for the
    array's pending work. max_version >= (1, 0) gives a 'dltensor_versioned' capsule, else the
    legacy 'dltensor' one."""
    if stream == 0:
        raise ValueError(
            "__dlpack__(stream=0) is ambiguous (DLPack forbids it): pass 1 for the legacy default "
            "stream, 2 for the per-thread default stream, or the stream's handle"
        )
    versioned = _wants_versioned(max_version)
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"copy must be True, False or None, got {copy!r}")
    own = dlpack_device(array)
    to_host = dl_device is not None and _check_dl_device(dl_device, own)
    flags = 0
    if to_host:
        if copy is False:
            raise BufferError(
                "a GPUArray reaches the CPU only by a copy, and copy=False forbids it"
            )
        host = np.ascontiguousarray(array.get())
        flags = _dl.FLAG_IS_COPIED if versioned else 0
        return _export(
            host,
            host.ctypes.data if host.size else 0,
            host.shape,
            host.strides,
            host.dtype,
            (kDLCPU, 0),
            versioned,
            flags,
        )
    if stream is not None and stream != -1:
        _dl.stream_wait(array_stream(array), stream)
    source = array
    if copy:
        source = array.copy()
        flags = _dl.FLAG_IS_COPIED if versioned else 0
    return _export(
        source,
        _ptr(source),
        source.shape,
        _byte_strides(source),
        source.dtype,
        own,
        versioned,
        flags,
    )


def _export(owner, ptr, shape, byte_strides, dtype, device, versioned, flags):
    code_bits_lanes = dlpack_dtype(dtype)
    itemsize = np.dtype(dtype).itemsize
    strides = []
    for s in byte_strides:
        if s % itemsize:
            raise BufferError(
                f"strides {tuple(byte_strides)} (bytes) are not multiples of the item size "
                f"{itemsize}; DLPack counts strides in elements"
            )
        strides.append(s // itemsize)
    return _dl.export_capsule(
        owner,
        ptr,
        tuple(int(n) for n in shape),
        tuple(strides),
        code_bits_lanes,
        device,
        versioned,
        flags,
    )


def to_numpy(array, dtype=None, copy=None):
    """``__array__``: the array's contents in a new NumPy array (always a copy)."""
    if copy is False:
        raise ValueError(
            "a GPUArray cannot become a NumPy array without a copy (device memory); "
            "pass copy=None or True, or use .get()"
        )
    host = array.get()
    if dtype is not None and np.dtype(dtype) != host.dtype:
        host = host.astype(dtype)
    return host


class ArrayInterop:
    """The exchange protocols as methods; GPUArray inherits them."""

    @property
    def __cuda_array_interface__(self):
        return cuda_array_interface(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return dlpack_device(self)

    def __array__(self, dtype=None, copy=None):
        return to_numpy(self, dtype, copy)


# }}}

# {{{ import


def _finish(view, readonly, copy, what):
    """Applies the copy rule: copy=True always copies; read-only memory (which a GPUArray
    cannot protect) is copied for copy=None and refused for copy=False."""
    if copy or (readonly and copy is None):
        return view.copy()
    if readonly:
        raise BufferError(
            f"{what} is read-only and a GPUArray is always writable; pass "
            "copy=None or copy=True for a writable copy"
        )
    return view


def _call_dlpack(x, stream):
    """x.__dlpack__ asked for a versioned capsule, falling back for producers that predate
    DLPack 1.0 (no max_version keyword)."""
    try:
        return x.__dlpack__(stream=stream, max_version=DLPACK_VERSION)
    except TypeError:
        pass
    try:
        return x.__dlpack__(stream=stream)
    except TypeError:
        return x.__dlpack__()


def from_dlpack(x, *, device=None, copy=None, stream=None) -> GPUArray:
    """A GPUArray sharing x's memory (CuPy, PyTorch, JAX, Numba arrays, any ``__dlpack__``
    producer), ordered after x's pending work on ``stream`` (None: the legacy default stream).
    Host (CPU) arrays are copied to the device unless copy=False. copy=True always copies.

    Parameters
    ----------
    x : object
        A ``__dlpack__`` producer.
    device : str | None
        'cuda' or 'gpu'; None: the producer's.
    copy : bool | None
        True: always copy; False: never; None: only host arrays.
    stream : Stream | None
        The stream the result is used on.

    Returns
    -------
    GPUArray
        The array.
    """
    if device is not None and device not in ("cuda", "gpu"):
        raise ValueError(
            f"device must be None or 'cuda' (cuplug arrays live on a GPU), got {device!r}"
        )
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack needs an object with __dlpack__, got {type(x).__name__}")
    if hasattr(x, "__dlpack_device__"):
        device_type = int(x.__dlpack_device__()[0])
        if device_type == kDLCPU:
            if copy is False:
                raise BufferError(
                    f"{type(x).__name__} lives in host memory; reaching the GPU needs a copy, "
                    "which copy=False forbids"
                )
            return to_gpu(np.ascontiguousarray(np.from_dlpack(x)))
    consumer = stream_handle(stream)
    capsule = _call_dlpack(x, _protocol_stream(consumer))
    return _from_capsule(capsule, copy, type(x).__name__)


def _from_capsule(capsule, copy, what):
    tensor = _dl.Imported(capsule)  # owns the tensor now; its end calls the producer's deleter
    try:
        return _import_tensor(tensor, copy, what)
    except BaseException:
        tensor.release()  # now, not when the traceback holding this frame goes
        raise


def _import_tensor(tensor, copy, what):
    device_type, _device_id = tensor.device
    if device_type not in _CUDA_READABLE:
        name = _DEVICE_NAMES.get(device_type, f"device type {device_type}")
        raise BufferError(f"{what} lives on {name} memory, which a CUDA kernel cannot read")
    dtype = numpy_dtype(*tensor.dtype)
    shape = tensor.shape
    if tensor.strides is None:
        byte_strides = _c_strides(shape, dtype.itemsize)
    else:
        byte_strides = tuple(s * dtype.itemsize for s in tensor.strides)
    readonly = bool(tensor.flags & _dl.FLAG_READ_ONLY)
    view = wrap_foreign(
        shape, dtype, tensor.ptr if math.prod(shape) else 0, byte_strides, tensor, what
    )
    return _finish(view, readonly, copy, what)


def kernel_argument_pointer(obj, stream):
    """The device address of a DLPack-only device array passed to a kernel launched on
    `stream` (the producer orders its pending work before it), or None when obj is not on a
    CUDA device."""
    if _cuda_dlpack_device(obj) is None:
        return None
    return int(from_dlpack(obj, copy=False, stream=stream).ptr)


def _cai_sync() -> bool:
    """CUPLUG_CUDA_ARRAY_INTERFACE_SYNC=0 turns the CUDA Array Interface v3 stream ordering off
    (CuPy's CUPY_CUDA_ARRAY_INTERFACE_SYNC)."""
    return os.environ.get("CUPLUG_CUDA_ARRAY_INTERFACE_SYNC") != "0"


def from_cuda_array_interface(obj, *, copy=None, stream=None):
    """A GPUArray over obj's ``__cuda_array_interface__`` (versions 0-3), keeping obj alive;
    ordered after the producer's ``stream`` on ``stream`` (None: the legacy default)."""
    what = f"{type(obj).__name__}.__cuda_array_interface__"
    shape, dtype, ptr, readonly, byte_strides, producer = parse_cai(
        obj.__cuda_array_interface__, what
    )
    view = wrap_foreign(shape, dtype, ptr if math.prod(shape) else 0, byte_strides, obj, what)
    if producer is not None and _cai_sync():
        _dl.stream_wait(producer, stream)
    return _finish(view, bool(readonly), copy, what)


def _cuda_dlpack_device(obj):
    """obj's DLPack device type when it has one and is CUDA-readable, else None."""
    getter = getattr(obj, "__dlpack_device__", None)
    if getter is None or not hasattr(obj, "__dlpack__"):
        return None
    try:
        device_type = int(getter()[0])
    except Exception:  # noqa: BLE001 - an odd producer: try the other protocols
        return None
    return device_type if device_type in _CUDA_READABLE else None


def asarray(obj, dtype=None, *, copy=None, stream=None) -> GPUArray:
    """A GPUArray of obj: itself for a GPUArray; the same memory for device arrays of other
    libraries (``__dlpack__``, else ``__cuda_array_interface__``); a copy to the device for
    anything NumPy can read. dtype other than obj's converts (a copy).

    Parameters
    ----------
    obj : numpy.typing.ArrayLike | GPUArray
        A GPUArray, another library's device array, or host data.
    dtype : numpy.typing.DTypeLike | None
        The element type; None: obj's.
    copy : bool | None
        True: always copy; False: never (an error when a copy is needed); None: when needed.
    stream : Stream | None
        The stream copies and waits are ordered on.

    Returns
    -------
    GPUArray
        The array.
    """
    if isinstance(obj, _core._array.ArrayBase):
        result = obj.copy() if copy else obj
    elif _cuda_dlpack_device(obj) is not None:
        result = from_dlpack(obj, copy=copy, stream=stream)
    elif hasattr(obj, "__cuda_array_interface__"):
        result = from_cuda_array_interface(obj, copy=copy, stream=stream)
    else:
        if copy is False:
            raise ValueError(
                f"{type(obj).__name__} is not device memory; making a GPUArray of it needs a "
                "copy, which copy=False forbids"
            )
        return to_gpu(np.ascontiguousarray(np.asarray(obj, dtype=dtype)))
    if dtype is not None and np.dtype(dtype) != result.dtype:
        if copy is False:
            raise ValueError(
                f"converting {result.dtype} to {np.dtype(dtype)} needs a copy, "
                "which copy=False forbids"
            )
        result = result.astype(dtype)
    return result


# }}}


__all__ = [
    "DLPACK_VERSION",
    "ArrayInterop",
    "asarray",
    "cuda_array_interface",
    "dlpack",
    "dlpack_device",
    "dlpack_dtype",
    "from_cuda_array_interface",
    "from_dlpack",
    "numpy_dtype",
    "stream_handle",
    "to_numpy",
]

_core._register_hooks(kernel_argument_pointer=kernel_argument_pointer)
