"""Host <-> device transfers of GPUArrays: to_gpu, set/get (and async forms), copy. Any strides
on either side: dense device arrays copy in one memcpy in their own memory order; other layouts
go through one dense device temporary and a strided copy kernel. Between devices: copy_to /
to_device."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from cuplug import _core
from cuplug._driver import peer as _peer
from cuplug._kernels.results import compact_strides, is_dense, memory_order
from cuplug._kernels.results import empty as _empty

if TYPE_CHECKING:
    from .core import GPUArray

__all__ = [
    "TransferMixin",
    "copy_to_context",
    "pickled_values",
    "to_device",
    "to_gpu",
    "to_gpu_async",
    "unpickle",
]

_apply = _core._array.apply
# The C++ layout's byte count: a subclass may set its own nbytes (PyCUDA's plain attribute,
# reikna's includes its offset), which no copy must go by.
_layout_nbytes = _core._array.ArrayBase.nbytes.__get__


def _host_like(ary, shape, strides):
    """`ary` (a host array of `shape`) as a C-contiguous array whose bytes are laid out as a
    dense device array of `strides`, and the permutation applied."""
    perm = memory_order(shape, strides)
    return np.ascontiguousarray(ary.transpose(perm)), perm


def _raw_bytes(host):
    """A C-contiguous host array as a buffer the copy functions take: datetime64 and
    timedelta64 arrays export no buffer, so they travel as their bytes (the same memory)."""
    if host.dtype.kind in "mM":
        return host.reshape(-1).view(np.uint8)
    return host


def _to_stream_kw(stream, kwargs, routine):
    if kwargs:
        if set(kwargs) - {"async"}:
            raise TypeError(f"{routine}() got unexpected keyword arguments {sorted(kwargs)}")
    return kwargs.get("async", False)


def _temporary(a):
    """A dense plain GPUArray in a's memory order (a staging copy: never of a's own type, whose
    constructor a subclass may have changed)."""
    return _empty(a.shape, a.dtype, strides=compact_strides(a.shape, a.strides, a.itemsize))


def _memcpy_discontig(dst, src, async_=False, stream=None):
    """Copies src into dst (GPUArrays or ndarrays of the same shape and dtype, any strides):
    PyCUDA's private helper, which libraries built on PyCUDA call (reikna's Array.copy)."""
    is_gpu = _core._array.ArrayBase
    if not isinstance(src, (is_gpu, np.ndarray)):
        raise TypeError("src must be GPUArray or ndarray")
    if not isinstance(dst, (is_gpu, np.ndarray)):
        raise TypeError("dst must be GPUArray or ndarray")
    if src.shape != dst.shape:
        raise ValueError("src and dst must be same shape")
    if src.dtype != dst.dtype:
        raise TypeError("src and dst must have same dtype")
    if isinstance(src, np.ndarray) and isinstance(dst, np.ndarray):
        dst[...] = src
    elif isinstance(dst, np.ndarray):
        src.get(ary=dst, async_=async_, stream=stream)
    elif isinstance(src, np.ndarray):
        dst.set(src, async_=async_, stream=stream)
    elif src.size:
        _apply("_copy", (src,), dst, stream)


class TransferMixin:
    def set(self, ary, async_=False, stream=None, **kwargs) -> None:
        """Copies host array `ary` (same size and dtype; a different shape is reshaped with a
        warning) into this array, whatever either side's strides."""
        async_ = async_ or _to_stream_kw(stream, kwargs, "set")
        if isinstance(ary, _core._array.ArrayBase):
            if ary.dtype != self.dtype:
                raise ValueError("ary and self must have the same dtype")
            if ary.size != self.size:
                raise ValueError("ary and self must be the same size")
            if ary.shape != self.shape:
                ary = ary.reshape(self.shape)
            _apply("_copy", (ary,), self, stream)
            return
        ary = np.asarray(ary)
        if ary.size != self.size:
            raise ValueError("ary and self must be the same size")
        if ary.shape != self.shape:
            warnings.warn("Setting array from one with different shape.", stacklevel=2)
            ary = ary.reshape(self.shape)
        if ary.dtype != self.dtype:
            raise ValueError("ary and self must have the same dtype")
        if self.size == 0:
            return
        if is_dense(self.shape, self.strides, self.itemsize):
            host, _ = _host_like(ary, self.shape, self.strides)
            if async_:
                _core.memcpy_htod_async(self.ptr, _raw_bytes(host), stream)
            else:
                _core.memcpy_htod(self.ptr, _raw_bytes(host))
            return
        tmp = _temporary(self)
        tmp.set(ary, async_=async_, stream=stream)
        _apply("_copy", (tmp,), self, stream)

    def set_async(self, ary, stream=None) -> None:
        return self.set(ary, async_=True, stream=stream)

    def _dense_source(self, stream):
        """self if dense, else a dense copy in the same memory order."""
        if is_dense(self.shape, self.strides, self.itemsize):
            return self
        tmp = _temporary(self)
        _apply("_copy", (self,), tmp, stream)
        return tmp

    def get(self, ary=None, pagelocked=False, async_=False, stream=None, **kwargs) -> np.ndarray:
        """This array in host memory: a new ndarray with the same axis order (page-locked with
        pagelocked=True), or `ary` filled (same size and dtype)."""
        async_ = async_ or _to_stream_kw(stream, kwargs, "get")
        if ary is not None:
            if not isinstance(ary, np.ndarray):
                raise TypeError(f"get: ary must be a numpy.ndarray, got {type(ary).__name__}")
            if ary.size != self.size:
                raise ValueError("self and ary must be the same size")
            if ary.dtype != self.dtype:
                raise TypeError("self and ary must have the same dtype")
            if ary.shape != self.shape:
                warnings.warn(
                    "get() between arrays of different shape is deprecated",
                    DeprecationWarning,
                    stacklevel=2,
                )
                ary = ary.reshape(self.shape)
        if self.size == 0:
            if ary is None:
                return np.empty(self.shape, self.dtype)
            return ary
        src = self._dense_source(stream)
        perm = memory_order(src.shape, src.strides)
        tshape = tuple(src.shape[k] for k in perm)
        inverse = np.argsort(perm)

        def fill(host):
            if async_:
                _core.memcpy_dtoh_async(_raw_bytes(host), src.ptr, stream)
            else:
                _core.memcpy_dtoh(_raw_bytes(host), src.ptr)

        if ary is None:
            if pagelocked:
                host = _core.pagelocked_empty(tshape, self.dtype)
            else:
                host = np.empty(tshape, self.dtype)
            fill(host)
            return host.transpose(inverse)
        direct = ary.transpose(perm)
        if direct.flags.c_contiguous:
            fill(direct)
        else:
            host = np.empty(tshape, self.dtype)
            fill(host)
            ary[...] = host.transpose(inverse)
        return ary

    def get_async(self, stream=None, ary=None) -> np.ndarray:
        """get() ordered on `stream`, into page-locked memory (so the copy really is
        asynchronous: synchronise the stream before reading the result)."""
        return self.get(ary=ary, pagelocked=ary is None, async_=True, stream=stream)

    def copy_to(self, device, stream=None) -> GPUArray:
        """A copy of this array on `device` (a Device, an ordinal or a Context): peer copy where
        the GPUs reach each other, through the host otherwise; a plain copy on the same one.

        Parameters
        ----------
        device : Device | int | Context
            Where the copy lives: a Device or ordinal means the current context when it is on
            that device, else the device's primary context.
        stream : Stream | None
            The stream the copy is ordered on; None: the legacy default stream.

        Returns
        -------
        GPUArray
            The copy, dense, on `device`.
        """
        return copy_to_context(self, _peer.as_context(device), stream)

    def copy(self, stream=None) -> GPUArray:
        """A new array with the same contents, allocator and memory order (dense); a subclass's
        _new_like_me makes it (PyCUDA's protocol)."""
        result = self._like_me(self.dtype)
        if result is None:
            result = type(self)(
                self.shape,
                self.dtype,
                allocator=self.allocator,
                strides=compact_strides(self.shape, self.strides, self.itemsize),
            )
        elif result.strides != compact_strides(self.shape, self.strides, self.itemsize):
            if self.size:
                _apply("_copy", (self,), result, stream)
            return result
        if self.size == 0:
            return result
        if is_dense(self.shape, self.strides, self.itemsize):
            if stream is None:
                _core.memcpy_dtod(result.ptr, self.ptr, _layout_nbytes(self))
            else:
                _core.memcpy_dtod_async(result.ptr, self.ptr, _layout_nbytes(self), stream)
        else:
            _apply("_copy", (self,), result, stream)
        return result


def copy_to_context(ary, dest, stream=None):
    """A dense copy of GPUArray `ary` in context `dest` (GPUArray.copy_to's engine): a device copy
    within one context, a peer copy between GPUs that reach each other (peer access enabled
    once per pair), else through host memory."""
    src = ary.context
    with dest:
        if src is None or src.handle == dest.handle:
            return ary.copy(stream)
        result = type(ary)(
            ary.shape, ary.dtype, strides=compact_strides(ary.shape, ary.strides, ary.itemsize)
        )
    if ary.size == 0:
        return result
    if not is_dense(ary.shape, ary.strides, ary.itemsize):
        with src:
            ary = ary.copy(stream)
    if _peer.peer_access(dest, src):
        with dest:
            if stream is None:
                _core.memcpy_peer(result.ptr, ary.ptr, ary.nbytes, dest, src)
            else:
                _core.memcpy_peer_async(result.ptr, ary.ptr, ary.nbytes, dest, src, stream)
        return result
    host = np.empty(ary.nbytes, np.uint8)
    with src:
        _core.memcpy_dtoh(host, ary.ptr)
    with dest:
        _core.memcpy_htod(result.ptr, host)
    return result


def to_device(ary, device, stream=None) -> GPUArray:
    """A GPUArray on `device` (a Device, an ordinal or a Context) holding a copy of `ary`, a
    GPUArray on any device or a host array. A device ordinal or Device means the current context
    if it is on that device, else the device's primary context.

    Parameters
    ----------
    ary : GPUArray | numpy.typing.ArrayLike
        What to copy: an array of any device, or host data.
    device : Device | int | Context
        Where the copy lives.
    stream : Stream | None
        The stream the copy is ordered on; None: the legacy default stream.

    Returns
    -------
    GPUArray
        The copy on `device`.
    """
    dest = _peer.as_context(device)
    if isinstance(ary, _core._array.ArrayBase):
        return copy_to_context(ary, dest, stream)
    with dest:
        return to_gpu(ary) if stream is None else to_gpu_async(ary, stream=stream)


def pickled_values(a) -> np.ndarray:
    """The host copy GPUArray.__reduce__ pickles: read with the array's own context pushed, so
    that it works from a thread with no context current (the thread a Dask or Ray worker
    serializes results in) or with another device's context current."""
    ctx = a.context
    if ctx is None:  # a detached context's array: get() says so
        return a.get()
    with ctx:
        return a.get()


def unpickle(host) -> GPUArray:
    """The unpickling half of GPUArray.__reduce__: `host` copied to the current context's
    device; in a thread with no context current (the thread a Dask or Ray worker deserializes
    arguments in), to device 0's primary context: the default device of CUDA's runtime, CuPy and
    PyTorch, and in a worker pinned to one GPU with CUDA_VISIBLE_DEVICES that GPU."""
    if _core.Context.get_current(adopt=True) is not None:
        return to_gpu(host)
    _core.init()
    if _core.Device.count() == 0:
        raise RuntimeError("unpickling a GPUArray: no CUDA device is visible to this process")
    with _peer.as_context(0):
        return to_gpu(host)


def to_gpu(ary, allocator=None) -> GPUArray:
    """A GPUArray holding a copy of host array `ary` (same shape, dtype and axis order).

    Parameters
    ----------
    ary : numpy.typing.ArrayLike
        The host data.
    allocator : collections.abc.Callable | None
        Allocates the memory (bytes -> DeviceAllocation); None: the current allocator.

    Returns
    -------
    GPUArray
        The copy.
    """
    ary = np.asarray(ary)
    result = _empty(
        ary.shape,
        ary.dtype,
        allocator,
        strides=compact_strides(ary.shape, ary.strides, ary.dtype.itemsize),
    )
    result.set(ary)
    return result


def to_gpu_async(ary, allocator=None, stream=None) -> GPUArray:
    """to_gpu ordered on `stream` (asynchronous when `ary` is page-locked).

    Parameters
    ----------
    ary : numpy.typing.ArrayLike
        The host data (page-locked for an asynchronous copy).
    allocator : collections.abc.Callable | None
        Allocates the memory (bytes -> DeviceAllocation); None: the current allocator.
    stream : Stream | None
        The stream the copy is ordered on.

    Returns
    -------
    GPUArray
        The copy.
    """
    ary = np.asarray(ary)
    result = _empty(
        ary.shape,
        ary.dtype,
        allocator,
        strides=compact_strides(ary.shape, ary.strides, ary.dtype.itemsize),
    )
    result.set_async(ary, stream)
    return result
