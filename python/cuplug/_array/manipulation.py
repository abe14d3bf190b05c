"""Combining and gathering arrays: concatenate, stack, take, multi_take, multi_take_put,
multi_put, and the function forms of transpose and reshape."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cuplug import _core, _dtypes
from cuplug._kernels.engine import Arg, Kernel
from cuplug._kernels.results import result_class as _result_class

if TYPE_CHECKING:
    from .core import GPUArray

__all__ = [
    "concatenate",
    "multi_put",
    "multi_take",
    "multi_take_put",
    "reshape",
    "stack",
    "take",
    "transpose",
]

_apply = _core._array.apply
_kernels = {}


def transpose(a, axes=None) -> GPUArray:
    """A view of ``a`` with its axes permuted (``a.transpose(axes)``).

    Parameters
    ----------
    a : GPUArray
        The array.
    axes : tuple[int, ...], optional
        The new order of the axes; None reverses them.
    """
    return a.transpose(axes)


def reshape(a, *shape, **kwargs) -> GPUArray:
    """``a`` with a new shape: a view when the memory allows, else a copy (``a.reshape``).

    Parameters
    ----------
    a : GPUArray
        The array.
    *shape : int | tuple[int, ...]
        The new shape, in elements; one entry may be -1.
    **kwargs
        ``order``: 'C' or 'F', the index order of the reshape.
    """
    return a.reshape(*shape, **kwargs)


def _check_arrays(arrays, what):
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"need at least one array to {what}")
    for x in arrays:
        if not isinstance(x, _core._array.ArrayBase):
            raise TypeError(f"{what}: expected GPUArrays, got {type(x).__name__}")
    return arrays


def concatenate(arrays, axis=0, allocator=None, stream=None) -> GPUArray:
    """The arrays joined along an existing axis (numpy.concatenate; result_type dtype).

    Parameters
    ----------
    arrays : collections.abc.Sequence[GPUArray]
        The arrays.
    axis : int
        The axis they are joined along.
    allocator : collections.abc.Callable | None
        Allocates the result's memory; None: the current allocator.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    GPUArray
        The joined array.
    """
    cls = _result_class()

    arrays = _check_arrays(arrays, "concatenate")
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    axis %= ndim
    for x in arrays[1:]:
        if x.ndim != ndim:
            raise ValueError(
                "all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {ndim} dimension(s) and an array has {x.ndim} dimension(s)"
            )
        for d in range(ndim):
            if d != axis and x.shape[d] != arrays[0].shape[d]:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {d}, the arrays have sizes "
                    f"{arrays[0].shape[d]} and {x.shape[d]}"
                )
    dtype = np.result_type(*[x.dtype for x in arrays])
    shape = list(arrays[0].shape)
    shape[axis] = sum(x.shape[axis] for x in arrays)
    result = cls(tuple(shape), dtype, allocator or arrays[0].allocator)
    pos = 0
    for x in arrays:
        n = x.shape[axis]
        index = (slice(None),) * axis + (slice(pos, pos + n),)
        _apply("_copy", (x,), result[index], stream)
        pos += n
    return result


def stack(arrays, axis=0, allocator=None, stream=None) -> GPUArray:
    """The arrays (all of one shape) joined along a new axis (numpy.stack).

    Parameters
    ----------
    arrays : collections.abc.Sequence[GPUArray]
        The arrays.
    axis : int
        The new axis's position.
    allocator : collections.abc.Callable | None
        Allocates the result's memory; None: the current allocator.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    GPUArray
        The stacked array.
    """
    arrays = _check_arrays(arrays, "stack")
    shape = arrays[0].shape
    for x in arrays[1:]:
        if x.shape != shape:
            raise ValueError("all input arrays must have the same shape")
    ndim = len(shape) + 1
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    axis %= ndim
    index = (slice(None),) * axis + (None,)
    return concatenate([x[index] for x in arrays], axis=axis, allocator=allocator, stream=stream)


def _index_dtype(indices, what):
    if not isinstance(indices, _core._array.ArrayBase):
        raise TypeError(f"{what}: indices must be a GPUArray, got {type(indices).__name__}")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"{what}: indices must be integers, got {indices.dtype}")
    return indices.dtype


def _contiguous(a):
    return a if a._c_contiguous else _c_copy(a)


def _c_copy(a):
    cls = _result_class()

    out = cls(a.shape, a.dtype, a.allocator)
    _apply("_copy", (a,), out, None)
    return out


# Out-of-range indices are clipped to the array (NumPy's mode="clip"): a kernel cannot raise,
# and reading past the array is not an option. Negative ones count from the end, as NumPy's.
_GATHER = """long long j = (long long)idx[i];
if (j < 0) j += na;
j = j < 0 ? 0 : (j >= na ? na - 1 : j);
z[i] = a[j + offset];"""

_SCATTER = """long long j = (long long)idx[i];
if (j < 0) j += nz;
if (j >= 0 && j < nz) z[j] = a[i];"""

_TAKE_PUT = """long long s = (long long)sidx[i];
if (s < 0) s += na;
s = s < 0 ? 0 : (s >= na ? na - 1 : s);
long long j = (long long)didx[i];
if (j < 0) j += nz;
if (j >= 0 && j < nz) z[j] = a[s + offset];"""


def _kernel(kind, dtype, idx_dtype, idx2_dtype=None):
    key = (kind, dtype, idx_dtype, idx2_dtype)
    k = _kernels.get(key)
    if k is not None:
        return k
    i64 = np.int64
    tag = f"{_dtypes.tag(dtype)}{_dtypes.tag(idx_dtype)}"
    if kind == "take":
        args = [
            Arg("z", dtype, True),
            Arg("a", dtype, True),
            Arg("idx", idx_dtype, True),
            Arg("na", i64, False),
            Arg("offset", i64, False),
        ]
        k = Kernel(args, _GATHER, f"cuplug_take_{tag}", raw=("a",))
    elif kind == "put":
        args = [
            Arg("z", dtype, True),
            Arg("a", dtype, True),
            Arg("idx", idx_dtype, True),
            Arg("nz", i64, False),
        ]
        k = Kernel(args, _SCATTER, f"cuplug_put_{tag}", raw=("z",))
    else:
        args = [
            Arg("z", dtype, True),
            Arg("a", dtype, True),
            Arg("didx", idx_dtype, True),
            Arg("sidx", idx2_dtype, True),
            Arg("na", i64, False),
            Arg("nz", i64, False),
            Arg("offset", i64, False),
        ]
        k = Kernel(
            args, _TAKE_PUT, f"cuplug_take_put_{tag}{_dtypes.tag(idx2_dtype)}", raw=("z", "a")
        )
    _kernels[key] = k
    return k


def take(a, indices, out=None, stream=None) -> GPUArray:
    """a.flat[indices] (numpy.take without axis): the result has the indices' shape.
    Indices out of range are clipped; negative ones count from the end.

    Parameters
    ----------
    a : GPUArray
        The array.
    indices : GPUArray
        Integer indices into ``a.flat``.
    out : GPUArray | None
        Where the result goes; None: a new array.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    GPUArray
        The result (``out`` when given).
    """
    it = _index_dtype(indices, "take")
    a = _contiguous(a)
    if out is None:
        cls = _result_class()

        out = cls(indices.shape, a.dtype, a.allocator)
    if out.dtype != a.dtype:
        raise TypeError(f"take: out has dtype {out.dtype}, expected {a.dtype}")
    if a.size == 0:
        if indices.size:
            raise IndexError("cannot do a non-empty take from an empty array")
        return out
    _kernel("take", a.dtype, it)(out, a, indices, a.size, 0, stream=stream)
    return out


def multi_take(arrays, indices, out=None, stream=None) -> GPUArray:
    """[take(a, indices) for a in arrays], all with the indices' shape.

    Parameters
    ----------
    arrays : collections.abc.Sequence[GPUArray]
        The arrays.
    indices : GPUArray
        Integer indices into each array's flat view.
    out : list[GPUArray] | None
        Where the results go.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    list[GPUArray]
        One result per array.
    """
    arrays = _check_arrays(arrays, "multi_take")
    if out is None:
        out = [None] * len(arrays)
    return [take(a, indices, o, stream) for a, o in zip(arrays, out)]


def multi_take_put(
    arrays, dest_indices, src_indices, dest_shape=None, out=None, stream=None, src_offsets=None
):
    """out[k].flat[dest_indices[i]] = arrays[k].flat[src_indices[i] + src_offsets[k]].

    Parameters
    ----------
    arrays : collections.abc.Sequence[GPUArray]
        The arrays.
    dest_indices : GPUArray
        Integer indices into each result's flat view.
    src_indices : GPUArray
        Integer indices into each array's flat view.
    dest_shape : tuple[int, ...] | None
        The results' shape (when ``out`` is None).
    out : list[GPUArray] | None
        Where the results go.
    stream : Stream | None
        The stream the kernel runs on.
    src_offsets : collections.abc.Sequence[int] | None
        Per array, added to ``src_indices``.

    Returns
    -------
    list[GPUArray]
        One result per array.
    """
    cls = _result_class()

    arrays = _check_arrays(arrays, "multi_take_put")
    dt = _index_dtype(dest_indices, "multi_take_put")
    st = _index_dtype(src_indices, "multi_take_put")
    if dest_indices.shape != src_indices.shape:
        raise ValueError(
            f"multi_take_put: dest_indices {dest_indices.shape} and src_indices "
            f"{src_indices.shape} must have the same shape"
        )
    if out is None:
        if dest_shape is None:
            raise ValueError("multi_take_put: give dest_shape or out")
        out = [cls(dest_shape, a.dtype, a.allocator) for a in arrays]
    offsets = list(src_offsets) if src_offsets is not None else [0] * len(arrays)
    for a, o, off in zip(arrays, out, offsets):
        if o.dtype != a.dtype:
            raise TypeError(f"multi_take_put: out has dtype {o.dtype}, expected {a.dtype}")
        if not o._c_contiguous:
            raise ValueError("multi_take_put: out arrays must be C-contiguous")
        a = _contiguous(a)
        if a.size == 0 or o.size == 0 or dest_indices.size == 0:
            continue
        k = _kernel("take_put", a.dtype, dt, st)
        k(o, a, dest_indices, src_indices, a.size, o.size, int(off), stream=stream)
    return out


def multi_put(arrays, dest_indices, dest_shape=None, out=None, stream=None) -> GPUArray:
    """out[k].flat[dest_indices[i]] = arrays[k].flat[i]; indices out of range are skipped.

    Parameters
    ----------
    arrays : collections.abc.Sequence[GPUArray]
        The arrays.
    dest_indices : GPUArray
        Integer indices into each result's flat view.
    dest_shape : tuple[int, ...] | None
        The results' shape (when ``out`` is None).
    out : list[GPUArray] | None
        Where the results go.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    list[GPUArray]
        One result per array.
    """
    cls = _result_class()

    arrays = _check_arrays(arrays, "multi_put")
    it = _index_dtype(dest_indices, "multi_put")
    if out is None:
        if dest_shape is None:
            raise ValueError("multi_put: give dest_shape or out")
        out = [cls(dest_shape, a.dtype, a.allocator) for a in arrays]
    for a, o in zip(arrays, out):
        if o.dtype != a.dtype:
            raise TypeError(f"multi_put: out has dtype {o.dtype}, expected {a.dtype}")
        if not o._c_contiguous:
            raise ValueError("multi_put: out arrays must be C-contiguous")
        src = a if a.shape == dest_indices.shape else a.reshape(dest_indices.shape)
        if dest_indices.size == 0 or o.size == 0:
            continue
        _kernel("put", a.dtype, it)(o, src, dest_indices, o.size, stream=stream)
    return out
