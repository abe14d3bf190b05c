"""Creating GPUArrays: empty, zeros, ones, the *_like forms (order A/K/C/F) and arange."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from cuplug import _core, _dtypes
from cuplug._kernels.engine import Arg, Kernel
from cuplug._kernels.results import compact_strides
from cuplug._kernels.results import result_class as _cls

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from .core import GPUArray

__all__ = ["arange", "empty", "empty_like", "ones", "ones_like", "zeros", "zeros_like"]

_apply = _core._array.apply


def empty(
    shape,
    dtype: DTypeLike = np.float64,
    allocator=None,
    base=None,
    gpudata=None,
    strides=None,
    order="C",
) -> GPUArray:
    """An uninitialised array (PyCUDA's GPUArray constructor).

    Parameters
    ----------
    shape : int | tuple[int, ...]
        The shape, in elements.
    dtype : numpy.typing.DTypeLike
        The element type.
    allocator : collections.abc.Callable | None
        Allocates the memory (bytes -> DeviceAllocation); None: the current allocator.
    base : object | None
        An object the array keeps alive (a view's base).
    gpudata : DeviceAllocation | int | None
        Existing device memory to use instead of allocating.
    strides : tuple[int, ...] | None
        Bytes between elements along each axis; None: contiguous in ``order``.
    order : str
        'C' (row-major) or 'F' (column-major).

    Returns
    -------
    GPUArray
        The array.
    """
    return _cls()(shape, dtype, allocator, base, gpudata, strides, order)


def zeros(shape, dtype: DTypeLike = np.float64, allocator=None, order="C", stream=None) -> GPUArray:
    """An array of zeros.

    Parameters
    ----------
    shape : int | tuple[int, ...]
        The shape, in elements.
    dtype : numpy.typing.DTypeLike
        The element type.
    allocator : collections.abc.Callable | None
        Allocates the memory (bytes -> DeviceAllocation); None: the current allocator.
    order : str
        'C' (row-major) or 'F' (column-major).
    stream : Stream | None
        The stream the fill is ordered on.

    Returns
    -------
    GPUArray
        The array.
    """
    result = _cls()(shape, dtype, allocator, order=order)
    return result.fill(0, stream=stream)


def ones(shape, dtype: DTypeLike = np.float64, allocator=None, order="C", stream=None) -> GPUArray:
    """An array of ones.

    Parameters
    ----------
    shape : int | tuple[int, ...]
        The shape, in elements.
    dtype : numpy.typing.DTypeLike
        The element type.
    allocator : collections.abc.Callable | None
        Allocates the memory (bytes -> DeviceAllocation); None: the current allocator.
    order : str
        'C' (row-major) or 'F' (column-major).
    stream : Stream | None
        The stream the fill is ordered on.

    Returns
    -------
    GPUArray
        The array.
    """
    result = _cls()(shape, dtype, allocator, order=order)
    return result.fill(1, stream=stream)


def _like_strides(other, dtype, order):
    if order == "K":
        return compact_strides(other.shape, other.strides, dtype.itemsize)
    if order == "A":
        order = "F" if other._f_contiguous and not other._c_contiguous else "C"
    if order == "C":
        return None
    if order == "F":
        strides, s = [], dtype.itemsize
        for n in other.shape:
            strides.append(s)
            s *= max(n, 1)
        return tuple(strides)
    raise ValueError(f"order must be one of 'A', 'K', 'C' or 'F', got {order!r}")


def empty_like(other_ary, dtype=None, order="K") -> GPUArray:
    """An uninitialised array of other_ary's shape (and dtype unless given), memory order per
    `order` ("K": other_ary's axis order, "A": F if it is F-contiguous, "C", "F"), made with
    other_ary's allocator.

    Parameters
    ----------
    other_ary : GPUArray | numpy.ndarray
        The array whose shape (and dtype, order) the new one takes.
    dtype : numpy.typing.DTypeLike | None
        The element type; None: ``other_ary``'s.
    order : str
        'C', 'F', 'A' or 'K' (keep ``other_ary``'s layout).

    Returns
    -------
    GPUArray
        The array.
    """
    dtype = other_ary.dtype if dtype is None else np.dtype(dtype)
    strides = _like_strides(other_ary, dtype, order)
    return type(other_ary)(other_ary.shape, dtype, allocator=other_ary.allocator, strides=strides)


def zeros_like(other_ary, dtype=None, order="K", stream=None) -> GPUArray:
    """A GPUArray of zeros with the shape of ``other_ary``.

    Parameters
    ----------
    other_ary : GPUArray | numpy.ndarray
        The array whose shape (and dtype, order) the new one takes.
    dtype : numpy.typing.DTypeLike, optional
        The element type; None: ``other_ary``'s.
    order : str
        'C', 'F', 'A' or 'K' (keep ``other_ary``'s layout), as NumPy's.
    stream : Stream, optional
        The stream the fill is ordered on.
    """
    return empty_like(other_ary, dtype, order).fill(0, stream=stream)


def ones_like(other_ary, dtype=None, order="K", stream=None) -> GPUArray:
    """A GPUArray of ones with the shape of ``other_ary``.

    Parameters
    ----------
    other_ary : GPUArray | numpy.ndarray
        The array whose shape (and dtype, order) the new one takes.
    dtype : numpy.typing.DTypeLike, optional
        The element type; None: ``other_ary``'s.
    order : str
        'C', 'F', 'A' or 'K' (keep ``other_ary``'s layout), as NumPy's.
    stream : Stream, optional
        The stream the fill is ordered on.
    """
    return empty_like(other_ary, dtype, order).fill(1, stream=stream)


def _full_like_shape(arr, value, dtype, out, stream):
    if out is None:
        out = empty_like(arr, dtype)
    return out.fill(value, stream=stream)


_arange_kernels = {}


def _arange_kernel(dtype):
    k = _arange_kernels.get(dtype)
    if k is None:
        if dtype == np.float16:
            # NumPy's HALF_fill: in float, rounded once.
            op = "z[i] = __float2half_rn(start + (float)i * delta);"
            sdt = np.dtype(np.float32)
        else:
            ct = _dtypes.ctype(dtype)
            op = f"z[i] = ({ct})(start + ({ct})i * delta);"
            sdt = dtype
        k = Kernel(
            [Arg("z", dtype, True), Arg("start", sdt, False), Arg("delta", sdt, False)],
            op,
            f"cuplug_arange_{_dtypes.tag(dtype)}",
            builtin=True,
        )
        k.scalar_dtype = sdt
        _arange_kernels[dtype] = k
    return k


def arange(*args, **kwargs) -> GPUArray:
    """Evenly spaced values in [start, stop): arange(stop), arange(start, stop[, step]), a
    dtype as a trailing positional or keyword; also start=, stop=, step=, allocator=, stream=.
    Values are NumPy's (start + i * delta, delta = dtype(start + step) - dtype(start)).

    Parameters
    ----------
    *args
        stop; or start, stop[, step][, dtype].
    **kwargs
        start, stop, step, dtype, allocator, stream.

    Returns
    -------
    GPUArray
        The values, a 1-D array.
    """
    args = list(args)
    dtype = None
    if args and isinstance(args[-1], (np.dtype, type)) and not isinstance(args[-1], bool):
        if isinstance(args[-1], np.dtype) or issubclass(args[-1], np.generic):
            dtype = np.dtype(args.pop())
    start = stop = None
    step = 1
    if len(args) == 1:
        stop = args[0]
    elif len(args) == 2:
        start, stop = args
    elif len(args) == 3:
        start, stop, step = args
    elif len(args) > 3:
        raise ValueError("too many arguments")
    for name in ("start", "stop", "step"):
        if name in kwargs:
            if name == "start":
                start = kwargs.pop(name)
            elif name == "stop":
                stop = kwargs.pop(name)
            else:
                step = kwargs.pop(name)
    if "dtype" in kwargs:
        dtype = kwargs.pop("dtype")
        dtype = None if dtype is None else np.dtype(dtype)
    allocator = kwargs.pop("allocator", None)
    stream = kwargs.pop("stream", None)
    if kwargs:
        raise TypeError(f"arange: unexpected keyword arguments {sorted(kwargs)}")
    if start is None:
        start = 0
    if stop is None:
        raise ValueError("arange: stop must be given")
    if step == 0:
        raise ValueError("arange: step must not be zero")
    if dtype is None:
        dtype = np.array([start, stop, step]).dtype
        if dtype != np.float32:
            warnings.warn(
                "behavior change: arange guessed dtype other than float32. "
                "suggest specifying explicit dtype.",
                stacklevel=2,
            )
    _dtypes.code_of(dtype)
    size = max(int(math.ceil((stop - start) / step)), 0)
    result = _cls()((size,), dtype, allocator)
    if size == 0:
        return result
    k = _arange_kernel(dtype)
    with np.errstate(all="ignore"):
        first = np.array([start, start + step]).astype(dtype)
        delta = first[1] - first[0]
    sdt = k.scalar_dtype
    k(result, sdt.type(first[0]), sdt.type(delta), stream=stream)
    return result
