"""Whole-array reductions of cuplug.gpuarray with PyCUDA's signatures (0-d GPUArray results):
sum, subset_sum, dot, subset_dot, vdot, min, max, subset_min, subset_max, any, all. Result
dtypes follow NumPy (integer sums promote as ``numpy.sum`` does); strided inputs are copied to
a contiguous array first. The kernels are cuplug.reduction's."""

from __future__ import annotations

import numpy as np

__all__ = [
    "all",
    "any",
    "dot",
    "max",
    "min",
    "subset_dot",
    "subset_max",
    "subset_min",
    "subset_sum",
    "sum",
    "vdot",
]


_SUM_DTYPES = {}


def _sum_dtype(dtype):
    """numpy.sum's result dtype for elements of dtype (bool and small integers widen)."""
    out = _SUM_DTYPES.get(dtype)
    if out is None:
        out = _SUM_DTYPES[dtype] = np.sum(np.zeros(0, dtype)).dtype
    return out


def _contiguous(a, stream=None):
    return a if a.flags.forc else a.copy(stream=stream)


def _check_supported(where, *arrays):
    for a in arrays:
        if a.dtype.kind not in "biufc":
            raise TypeError(f"gpuarray.{where}: not defined for dtype {a.dtype}")


def sum(a, dtype=None, stream=None, allocator=None):  # noqa: A001 - PyCUDA's name
    """The sum of all elements, as a 0-d GPUArray of NumPy's sum dtype (or ``dtype``)."""
    from . import reduction_kernels as reduction

    _check_supported("sum", a)
    out_dtype = np.dtype(dtype) if dtype is not None else _sum_dtype(a.dtype)
    kernel = reduction.get_sum_kernel(out_dtype, a.dtype)
    return kernel(_contiguous(a, stream), stream=stream, allocator=allocator)


def subset_sum(subset, a, dtype=None, stream=None, allocator=None):
    """The sum of ``a[subset]`` (``subset``: integer indices)."""
    from . import reduction_kernels as reduction

    _check_supported("subset_sum", a)
    _check_indices("subset_sum", subset)
    out_dtype = np.dtype(dtype) if dtype is not None else _sum_dtype(a.dtype)
    kernel = reduction.get_subset_sum_kernel(out_dtype, subset.dtype, a.dtype)
    return kernel(
        _contiguous(subset, stream), _contiguous(a, stream), stream=stream, allocator=allocator
    )


def _check_same_size(where, a, b):
    if a.size != b.size:
        raise ValueError(f"gpuarray.{where}: sizes differ ({a.size} and {b.size} elements)")


def _check_indices(where, subset):
    if subset.dtype.kind not in "iu":
        raise TypeError(f"gpuarray.{where}: subset must hold integer indices, got {subset.dtype}")


def dot(a, b, dtype=None, stream=None, allocator=None):
    """The sum of a*b over all elements (1-D vectors of the same size), as a 0-d GPUArray."""
    from . import reduction_kernels as reduction

    _check_supported("dot", a, b)
    _check_same_size("dot", a, b)
    out_dtype = np.dtype(dtype) if dtype is not None else np.result_type(a.dtype, b.dtype)
    kernel = reduction.get_dot_kernel(out_dtype, a.dtype, b.dtype)
    return kernel(
        _contiguous(a, stream), _contiguous(b, stream), stream=stream, allocator=allocator
    )


def vdot(a, b, dtype=None, stream=None, allocator=None):
    """dot with ``a`` complex-conjugated (numpy.vdot)."""
    from cuplug._cargs import VectorArg

    from . import reduction_kernels as reduction

    _check_supported("vdot", a, b)
    _check_same_size("vdot", a, b)
    out_dtype = np.dtype(dtype) if dtype is not None else np.result_type(a.dtype, b.dtype)
    if a.dtype.kind != "c":
        return dot(a, b, dtype=out_dtype, stream=stream, allocator=allocator)
    key = ("vdot", out_dtype, a.dtype, b.dtype)
    kernel = reduction._cached(
        key,
        lambda: reduction.ReductionKernel(
            out_dtype,
            "0",
            "a+b",
            "cuda::std::conj((acc_type)a[i])*(acc_type)b[i]",
            [VectorArg(a.dtype, "a"), VectorArg(b.dtype, "b")],
            name="cuplug_vdot_" + reduction._tag(out_dtype, a.dtype, b.dtype),
            acc_dtype=reduction._acc_for(out_dtype),
        ),
    )
    return kernel(
        _contiguous(a, stream), _contiguous(b, stream), stream=stream, allocator=allocator
    )


def _minmax(what, a, stream, allocator):
    from . import reduction_kernels as reduction

    _check_supported(what, a)
    if a.size == 0:
        name = "minimum" if what == "min" else "maximum"
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    kernel = reduction.get_minmax_kernel(what, a.dtype)
    return kernel(_contiguous(a, stream), stream=stream, allocator=allocator)


def min(a, stream=None, allocator=None):  # noqa: A001 - PyCUDA's name
    """The smallest element (NaN when there is one), as a 0-d GPUArray."""
    return _minmax("min", a, stream, allocator)


def max(a, stream=None, allocator=None):  # noqa: A001 - PyCUDA's name
    """The largest element (NaN when there is one), as a 0-d GPUArray."""
    return _minmax("max", a, stream, allocator)


def _subset_minmax(what, subset, a, stream, allocator):
    from . import reduction_kernels as reduction

    _check_supported("subset_" + what, a)
    _check_indices("subset_" + what, subset)
    if subset.size == 0:
        name = "minimum" if what == "min" else "maximum"
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    kernel = reduction.get_subset_minmax_kernel(what, a.dtype, subset.dtype)
    return kernel(
        _contiguous(subset, stream), _contiguous(a, stream), stream=stream, allocator=allocator
    )


def subset_min(subset, a, stream=None, allocator=None):
    return _subset_minmax("min", subset, a, stream, allocator)


def subset_max(subset, a, stream=None, allocator=None):
    return _subset_minmax("max", subset, a, stream, allocator)


def subset_dot(subset, a, b, dtype=None, stream=None, allocator=None):
    """The sum of a[subset]*b[subset]."""
    from . import reduction_kernels as reduction

    _check_supported("subset_dot", a, b)
    _check_indices("subset_dot", subset)
    out_dtype = np.dtype(dtype) if dtype is not None else np.result_type(a.dtype, b.dtype)
    kernel = reduction.get_subset_dot_kernel(out_dtype, subset.dtype, a.dtype, b.dtype)
    return kernel(
        _contiguous(subset, stream),
        _contiguous(a, stream),
        _contiguous(b, stream),
        stream=stream,
        allocator=allocator,
    )


def any(a, stream=None, allocator=None):  # noqa: A001 - PyCUDA's name
    """Whether some element is nonzero, as a 0-d bool GPUArray."""
    from . import reduction_kernels as reduction

    _check_supported("any", a)
    return reduction.get_any_kernel(a.dtype)(
        _contiguous(a, stream), stream=stream, allocator=allocator
    )


def all(a, stream=None, allocator=None):  # noqa: A001 - PyCUDA's name
    """Whether every element is nonzero, as a 0-d bool GPUArray."""
    from . import reduction_kernels as reduction

    _check_supported("all", a)
    return reduction.get_all_kernel(a.dtype)(
        _contiguous(a, stream), stream=stream, allocator=allocator
    )
