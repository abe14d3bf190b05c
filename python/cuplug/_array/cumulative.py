"""NumPy's cumulative sums and products on GPUArrays: ``gpuarray.cumsum(a, axis=None, dtype=None,
out=None, stream=None)`` and ``cumprod``, with NumPy's result dtypes (bool and small integers
accumulate in the platform integer), ``axis=None`` flattening in C order, and ``out=`` of any
numeric dtype (the result is cast into it, as NumPy does).

The work is one single-pass scan kernel (cuplug._codegen.scan): along a 1-d array of any step
(negative too) in the kernel; along the last axis of a C-contiguous array as one scan restarted
at each row. Other axes and layouts are first copied so that the axis is the last one of a
C-contiguous array (and the result copied back into place). Float16 accumulates in float32;
float results are the same bits on every run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cuplug import _core, _dtypes
from cuplug._kernels.scan import ArrayScan

from .creation import empty

if TYPE_CHECKING:
    from .core import GPUArray

__all__ = ["cumprod", "cumsum", "cumulative_dtype", "normalize_axis"]

_FUNCS = {"sum": np.cumsum, "prod": np.cumprod}
_AxisError = getattr(np, "exceptions", np).AxisError  # np.exceptions: NumPy 1.25+
_RESULT = {}


def cumulative_dtype(op, dtype, requested=None):
    """The dtype ``numpy.cum<op>`` gives for elements of ``dtype`` (``requested``: NumPy's
    ``dtype=`` argument), e.g. int64 for int8 and bool, uint64 for uint16."""
    if requested is not None:
        return np.dtype(requested)
    dtype = np.dtype(dtype)
    key = (op, dtype)
    out = _RESULT.get(key)
    if out is None:
        out = _RESULT[key] = _FUNCS[op](np.zeros(1, dtype)).dtype
    return out


def accumulator_dtype(result):
    """What values are added up in: float32 for a float16 result, the result dtype otherwise."""
    return np.dtype(np.float32) if result == np.float16 else np.dtype(result)


def normalize_axis(axis, ndim):
    """``axis`` as an index in ``range(ndim)`` (negative ones count from the end); NumPy's
    AxisError when out of range."""
    try:
        axis = int(axis.__index__())
    except AttributeError:
        raise TypeError(f"axis must be an integer or None, got {type(axis).__name__}") from None
    if not -ndim <= axis < ndim:
        raise _AxisError(axis, ndim)
    return axis % ndim


def _op_expr(op, acc):
    """The C operator of ``a`` and ``b`` for accumulator dtype ``acc``: integers wrap around as
    NumPy's do (in unsigned arithmetic: signed overflow is undefined in C++)."""
    sym = "+" if op == "sum" else "*"
    if acc.kind == "b":
        return "a || b" if op == "sum" else "a && b"
    if acc.kind in "iu":
        return f"(scan_type)((unsigned long long)a {sym} (unsigned long long)b)"
    if acc.kind == "c" and op == "prod":
        # NumPy's complex product (libcu++'s operator* adds C99's inf/NaN recovery, which
        # NumPy does not do, and which triples the kernel's compile time).
        return (
            "scan_type(a.real() * b.real() - a.imag() * b.imag(), "
            "a.real() * b.imag() + a.imag() * b.real())"
        )
    return f"a {sym} b"


_kernels = {}


def array_scan_for(op, in_dtype, result_dtype, out_dtype, segmented):
    """The cached ArrayScan for cum<op> of ``in_dtype`` elements computed in ``result_dtype``
    (NumPy's; float16 accumulates in float32) and stored as ``out_dtype``."""
    in_dtype, out_dtype = np.dtype(in_dtype), np.dtype(out_dtype)
    acc = accumulator_dtype(result_dtype)
    key = (op, in_dtype, acc, out_dtype, segmented)
    scan = _kernels.get(key)
    if scan is None:
        expr = _op_expr(op, acc)
        if segmented:
            expr = f"across_seg_boundary ? b : ({expr})"
        tags = "_".join(_dtypes.tag(d) for d in (in_dtype, acc, out_dtype))
        name = f"cuplug_cum{op}_{tags}" + ("_rows" if segmented else "")
        scan = _kernels[key] = ArrayScan(
            name, in_dtype, acc, out_dtype, expr, segmented=segmented, builtin=True
        )
    return scan


def _is_array(x):
    return isinstance(x, _core._array.ArrayBase)


def _check_dtype(where, dtype, what):
    if dtype.kind not in "biufc":
        raise TypeError(f"gpuarray.{where}: {what} dtype {dtype} is not a number type")


def _element_step(ary, axis):
    s = ary.strides[axis]
    return s // ary.itemsize if s % ary.itemsize == 0 else None


def _copy_into(dst, src, stream):
    _core._array.apply("_copy", (src,), dst, stream)


def _cumulative(op, a, axis, dtype, out, stream):
    where = f"cum{op}"
    if not _is_array(a):
        raise TypeError(f"gpuarray.{where}: a must be a GPUArray, got {type(a).__name__}")
    _check_dtype(where, a.dtype, "input")
    result_dtype = cumulative_dtype(op, a.dtype, dtype)
    _check_dtype(where, result_dtype, "result")
    if a.dtype.kind == "c" and result_dtype.kind != "c":
        raise TypeError(
            f"gpuarray.{where}: dtype={result_dtype} would discard the imaginary parts of "
            f"{a.dtype}; take .real first"
        )
    if axis is None:
        shape = (a.size,)
    else:
        axis = normalize_axis(axis, max(a.ndim, 1))
        shape = a.shape if a.ndim else (1,)
    if out is not None:
        if not _is_array(out):
            raise TypeError(f"gpuarray.{where}: out must be a GPUArray, got {type(out).__name__}")
        if tuple(out.shape) != tuple(shape):
            raise ValueError(
                f"gpuarray.{where}: out has shape {out.shape}, the result has shape {shape}"
            )
        _check_dtype(where, out.dtype, "out")
        if result_dtype.kind == "c" and out.dtype.kind != "c":
            raise TypeError(
                f"gpuarray.{where}: out of dtype {out.dtype} cannot hold the complex result "
                f"({result_dtype})"
            )
    n = a.size
    if n == 0:
        return out if out is not None else empty(shape, result_dtype, allocator=a.allocator)
    allocator = a.allocator
    src = a.reshape(shape) if a.ndim == 0 else a
    if axis is None:
        if src.ndim != 1:
            src = src.reshape(n)  # a view when C-contiguous, else a C-order copy
        axis = 0
    ndim = src.ndim
    # The scan runs along the last axis of `moved` (a view of src with `axis` moved last).
    perm = [k for k in range(ndim) if k != axis] + [axis]
    moved = src.transpose(perm) if axis != ndim - 1 else src
    rows = moved.shape[-1]
    if ndim == 1:
        step = _element_step(moved, 0)
        if step is None:
            moved, step = moved.copy(stream=stream), 1
        in_step = step
    else:
        if not moved._c_contiguous:
            dense = empty(moved.shape, moved.dtype, allocator=allocator)
            _copy_into(dense, moved, stream)
            moved = dense
        in_step = 1
    # Where the kernel writes: out itself when it is laid out as the result needs, else a
    # C-contiguous temporary of the moved shape copied back at the end.
    target = None
    if out is not None:
        out_moved = out.transpose(perm) if axis != ndim - 1 else out
        if ndim == 1:
            step = _element_step(out_moved, 0)
            if step is not None:
                target, out_step = out_moved, step
        elif out_moved._c_contiguous:
            target, out_step = out_moved, 1
    store_dtype = out.dtype if target is not None else result_dtype
    if target is None:
        target, out_step = empty(moved.shape, result_dtype, allocator=allocator), 1
    segmented = ndim > 1 and n != rows
    scan = array_scan_for(op, moved.dtype, result_dtype, store_dtype, segmented)
    scan(
        moved.ptr,
        in_step,
        target.ptr,
        out_step,
        n,
        row=rows if segmented else 0,
        stream=stream,
        allocator=allocator,
    )
    result = (
        target if axis == ndim - 1 else target.transpose(tuple(int(k) for k in np.argsort(perm)))
    )
    if out is not None:
        if result.ptr != out.ptr or result.strides != out.strides:
            _copy_into(out, result.reshape(out.shape), stream)
        return out
    if not result._c_contiguous:
        dense = empty(result.shape, result.dtype, allocator=allocator)
        _copy_into(dense, result, stream)
        result = dense
    return result.reshape(shape)


def cumsum(a, axis=None, dtype=None, out=None, stream=None) -> GPUArray:
    """``numpy.cumsum`` of a GPUArray: the running sums along ``axis`` (None: over the
    flattened array, in C order), in NumPy's result dtype or ``dtype``; ``out`` (of the result's
    shape, any number dtype) receives them. Returns a C-contiguous array (or ``out``).

    Parameters
    ----------
    a : GPUArray
        The array.
    axis : int | None
        The axis; None: the flattened array.
    dtype : numpy.typing.DTypeLike | None
        The result's type; None: NumPy's rule for the input.
    out : GPUArray | None
        Where the result goes; None: a new array.
    stream : Stream | None
        The stream the kernels run on.

    Returns
    -------
    GPUArray
        The running sums.
    """
    return _cumulative("sum", a, axis, dtype, out, stream)


def cumprod(a, axis=None, dtype=None, out=None, stream=None) -> GPUArray:
    """``numpy.cumprod`` of a GPUArray (see :func:`cumsum`).

    Parameters
    ----------
    a : GPUArray
        The array.
    axis : int | None
        The axis; None: the flattened array.
    dtype : numpy.typing.DTypeLike | None
        The result's type; None: NumPy's rule for the input.
    out : GPUArray | None
        Where the result goes; None: a new array.
    stream : Stream | None
        The stream the kernels run on.

    Returns
    -------
    GPUArray
        The running products.
    """
    return _cumulative("prod", a, axis, dtype, out, stream)
