"""gpuarray's reductions: PyCUDA's whole-array functions with their signatures (sum, subset_sum,
dot, subset_dot, vdot, min, max, subset_min, subset_max, any, all: 0-d GPUArray results) and
NumPy's reductions over axes (sum, prod, min, max, argmin, argmax, any, all, mean, var, std,
nansum, nanprod, nanmin, nanmax, nanmean, nanvar, nanstd with axis=, dtype=, out=, keepdims=).

The functions PyCUDA has keep its positional order working: ``sum(a, dtype, stream,
allocator)``, ``any(a, stream, allocator)``, ``min(a, stream)`` are told from NumPy's
``sum(a, axis, dtype, out)`` by what is passed (a dtype where the axis goes, a stream where the
axis or dtype goes, an allocator where ``out`` goes). Result dtypes follow NumPy (integer sums
promote as ``numpy.sum`` does). The NumPy reductions run on cuplug._kernels.axis_reduction (any
strides, no copies); subset_*, dot and vdot on cuplug.reduction's kernels (strided inputs are
copied first)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Callable, TypeVar

import numpy as np

from cuplug._kernels import reduction
from cuplug._kernels.axis_reduction import reduce as _reduce
from cuplug._kernels.cargs import VectorArg

if TYPE_CHECKING:
    from .core import GPUArray

__all__ = [
    "ReductionMixin",
    "all",
    "any",
    "argmax",
    "argmin",
    "dot",
    "max",
    "mean",
    "min",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "prod",
    "std",
    "subset_dot",
    "subset_max",
    "subset_min",
    "subset_sum",
    "sum",
    "var",
    "vdot",
]


# ---- the NumPy docstring sections, from one table --------------------------------------------

#: (type, description) of every parameter the reductions take, as their docstrings show them.
_PARAMETERS = {
    "subset": ("GPUArray", "Indices (an integer array) of the elements taken into account."),
    "a": ("GPUArray", "The array."),
    "a, b": ("GPUArray", "The two vectors (same size)."),
    "axis": ("int | tuple[int, ...] | None", "The axes to reduce; None: every element."),
    "dtype": (
        "numpy.typing.DTypeLike | None",
        "The result's type; None: NumPy's rule for the input.",
    ),
    "out": ("GPUArray | None", "Where the result goes; None: a new array."),
    "ddof": ("int", "Subtracted from the element count in the divisor."),
    "keepdims": ("bool", "Keep the reduced axes, with length 1."),
    "stream": ("Stream | None", "The stream the kernels run on."),
    "allocator": (
        "collections.abc.Callable | None",
        "Allocates the result's memory (bytes -> DeviceAllocation); None: the current allocator.",
    ),
}
_RESULT = "The result (a 0-d array for a full reduction; ``out`` when given)."
_PROMOTED = "The result's type; None: the inputs' promoted type."


_Function = TypeVar("_Function", bound=Callable[..., object])


def _numpy_doc(returns=_RESULT, **descriptions) -> Callable[[_Function], _Function]:
    """Completes the decorated function's docstring (its summary) with NumPy's Parameters and
    Returns sections, one entry per parameter of its signature from _PARAMETERS (a pair a, b as
    one entry); ``descriptions`` replace a parameter's description where it differs. A parameter
    missing from the table fails at import, so no reduction goes undocumented."""

    def document(fn: _Function) -> _Function:
        names = list(inspect.signature(fn).parameters)
        if "a" in names and "b" in names:
            names[names.index("a")] = "a, b"
            names.remove("b")
        lines = [inspect.cleandoc(fn.__doc__), "", "Parameters", "----------"]
        for name in names:
            kind, text = _PARAMETERS[name]
            lines += [f"{name} : {kind}", f"    {descriptions.get(name, text)}"]
        lines += ["", "Returns", "-------", "GPUArray", f"    {returns}"]
        fn.__doc__ = "\n".join(lines)
        return fn

    return document


# ---- PyCUDA's positional order -----------------------------------------------------------------


def _is_stream(x):
    """A stream passed where NumPy's axis/dtype goes (PyCUDA's positional order)."""
    if x is None or isinstance(x, (int, tuple, list, np.integer)):
        return False
    return hasattr(x, "__cuda_stream__") or "Stream" in type(x).__name__


def _is_allocator(x):
    """An allocator passed where NumPy's out= goes (PyCUDA's positional order)."""
    return x is not None and callable(x) and not hasattr(x, "gpudata")


def _with_dtype_args(axis, dtype, out, stream, allocator):
    """PyCUDA's (dtype, stream, allocator) in NumPy's (axis, dtype, out) slots, sorted out."""
    if isinstance(axis, (type, np.dtype, str)):  # sum(a, np.float32, ...): PyCUDA's order
        axis, dtype, out, pycuda_stream, pycuda_alloc = None, axis, None, dtype, out
    elif _is_stream(dtype):  # sum(a, None, stream, ...)
        pycuda_stream, pycuda_alloc, dtype = dtype, out, None
        out = None
    elif _is_allocator(out):  # sum(a, None, None, allocator)
        pycuda_stream, pycuda_alloc, out = None, out, None
    else:
        return axis, dtype, out, stream, allocator
    return (
        axis,
        dtype,
        out,
        stream if pycuda_stream is None else pycuda_stream,
        allocator if pycuda_alloc is None else pycuda_alloc,
    )


def _with_stream_args(axis, out, stream, allocator):
    """PyCUDA's (stream, allocator) in NumPy's (axis, out) slots, sorted out."""
    if _is_stream(axis):
        stream, axis = axis, None
        if _is_allocator(out):
            allocator, out = out, None
    elif _is_allocator(out):
        allocator, out = out, None
    return axis, out, stream, allocator


@_numpy_doc()
def sum(
    a, axis=None, dtype=None, out=None, keepdims=False, stream=None, allocator=None
) -> GPUArray:  # noqa: A001
    """The sum over ``axis`` (numpy.sum); over all elements a 0-d GPUArray. Integer and bool
    sums promote as NumPy's do; float16/32 accumulate in double, complex64 in complex128.
    PyCUDA's ``sum(a, dtype, stream, allocator)`` works too."""
    if axis is not None or dtype is not None or out is not None:
        axis, dtype, out, stream, allocator = _with_dtype_args(axis, dtype, out, stream, allocator)
    return _reduce("sum", a, axis, dtype, out, keepdims, stream, allocator)


@_numpy_doc()
def prod(
    a, axis=None, dtype=None, out=None, keepdims=False, stream=None, allocator=None
) -> GPUArray:
    """The product over ``axis`` (numpy.prod)."""
    return _reduce("prod", a, axis, dtype, out, keepdims, stream, allocator)


@_numpy_doc()
def nansum(
    a, axis=None, dtype=None, out=None, keepdims=False, stream=None, allocator=None
) -> GPUArray:
    """The sum with NaNs counted as zero (numpy.nansum)."""
    return _reduce("nansum", a, axis, dtype, out, keepdims, stream, allocator)


@_numpy_doc()
def nanprod(
    a, axis=None, dtype=None, out=None, keepdims=False, stream=None, allocator=None
) -> GPUArray:
    """The product with NaNs counted as one (numpy.nanprod)."""
    return _reduce("nanprod", a, axis, dtype, out, keepdims, stream, allocator)


@_numpy_doc()
def min(a, axis=None, out=None, keepdims=False, stream=None, allocator=None) -> GPUArray:  # noqa: A001
    """The smallest element over ``axis`` (numpy.min: a NaN wins); ValueError when a slice is
    empty. PyCUDA's ``min(a, stream)`` works too."""
    if axis is not None or out is not None:
        axis, out, stream, allocator = _with_stream_args(axis, out, stream, allocator)
    return _reduce("min", a, axis, None, out, keepdims, stream, allocator)


@_numpy_doc()
def max(a, axis=None, out=None, keepdims=False, stream=None, allocator=None) -> GPUArray:  # noqa: A001
    """The largest element over ``axis`` (numpy.max: a NaN wins); ValueError when a slice is
    empty. PyCUDA's ``max(a, stream)`` works too."""
    if axis is not None or out is not None:
        axis, out, stream, allocator = _with_stream_args(axis, out, stream, allocator)
    return _reduce("max", a, axis, None, out, keepdims, stream, allocator)


@_numpy_doc()
def nanmin(a, axis=None, out=None, keepdims=False, stream=None, allocator=None) -> GPUArray:
    """The smallest element ignoring NaNs (numpy.nanmin; NaN where a slice is all NaN)."""
    return _reduce("nanmin", a, axis, None, out, keepdims, stream, allocator)


@_numpy_doc()
def nanmax(a, axis=None, out=None, keepdims=False, stream=None, allocator=None) -> GPUArray:
    """The largest element ignoring NaNs (numpy.nanmax; NaN where a slice is all NaN)."""
    return _reduce("nanmax", a, axis, None, out, keepdims, stream, allocator)


@_numpy_doc()
def argmin(a, axis=None, out=None, *, keepdims=False, stream=None, allocator=None) -> GPUArray:
    """The index of the first smallest element (numpy.argmin; the first NaN wins): along
    ``axis``, or into the C-order flattened array when ``axis`` is None. int64 results."""
    return _reduce("argmin", a, axis, None, out, keepdims, stream, allocator)


@_numpy_doc()
def argmax(a, axis=None, out=None, *, keepdims=False, stream=None, allocator=None) -> GPUArray:
    """The index of the first largest element (numpy.argmax; the first NaN wins)."""
    return _reduce("argmax", a, axis, None, out, keepdims, stream, allocator)


@_numpy_doc()
def any(a, axis=None, out=None, keepdims=False, stream=None, allocator=None) -> GPUArray:  # noqa: A001
    """Whether some element is nonzero (numpy.any), bool results. PyCUDA's
    ``any(a, stream, allocator)`` works too."""
    if axis is not None or out is not None:
        axis, out, stream, allocator = _with_stream_args(axis, out, stream, allocator)
    return _reduce("any", a, axis, None, out, keepdims, stream, allocator)


@_numpy_doc()
def all(a, axis=None, out=None, keepdims=False, stream=None, allocator=None) -> GPUArray:  # noqa: A001
    """Whether every element is nonzero (numpy.all), bool results. PyCUDA's
    ``all(a, stream, allocator)`` works too."""
    if axis is not None or out is not None:
        axis, out, stream, allocator = _with_stream_args(axis, out, stream, allocator)
    return _reduce("all", a, axis, None, out, keepdims, stream, allocator)


@_numpy_doc()
def mean(
    a, axis=None, dtype=None, out=None, keepdims=False, stream=None, allocator=None
) -> GPUArray:
    """The mean (numpy.mean): float64 for integers and bools, the input's float or complex
    dtype otherwise (summed in double); NaN for an empty slice."""
    return _reduce("mean", a, axis, dtype, out, keepdims, stream, allocator)


@_numpy_doc()
def nanmean(
    a, axis=None, dtype=None, out=None, keepdims=False, stream=None, allocator=None
) -> GPUArray:
    """The mean of the non-NaN elements (numpy.nanmean; NaN where there are none)."""
    return _reduce("nanmean", a, axis, dtype, out, keepdims, stream, allocator)


@_numpy_doc()
def var(
    a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, stream=None, allocator=None
) -> GPUArray:
    """The variance (numpy.var): the mean squared distance from the mean, divided by
    ``n - ddof``; real for complex input. One pass (Chan et al.'s pairwise update, in double)."""
    return _reduce("var", a, axis, dtype, out, keepdims, stream, allocator, ddof)


@_numpy_doc()
def std(
    a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, stream=None, allocator=None
) -> GPUArray:
    """The standard deviation (numpy.std): the square root of var."""
    return _reduce("std", a, axis, dtype, out, keepdims, stream, allocator, ddof)


@_numpy_doc()
def nanvar(
    a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, stream=None, allocator=None
) -> GPUArray:
    """The variance of the non-NaN elements (numpy.nanvar)."""
    return _reduce("nanvar", a, axis, dtype, out, keepdims, stream, allocator, ddof)


@_numpy_doc()
def nanstd(
    a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, stream=None, allocator=None
) -> GPUArray:
    """The standard deviation of the non-NaN elements (numpy.nanstd)."""
    return _reduce("nanstd", a, axis, dtype, out, keepdims, stream, allocator, ddof)


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


@_numpy_doc(
    dtype="The result's type; None: ``a``'s.",
    returns="A 0-d array holding the sum of ``a[subset]``.",
)
def subset_sum(subset, a, dtype=None, stream=None, allocator=None) -> GPUArray:
    """The sum of ``a[subset]`` (``subset``: integer indices)."""
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


@_numpy_doc(dtype=_PROMOTED, returns="A 0-d array holding the sum of a * b.")
def dot(a, b, dtype=None, stream=None, allocator=None) -> GPUArray:
    """The sum of a*b over all elements (1-D vectors of the same size), as a 0-d GPUArray."""
    _check_supported("dot", a, b)
    _check_same_size("dot", a, b)
    out_dtype = np.dtype(dtype) if dtype is not None else np.result_type(a.dtype, b.dtype)
    kernel = reduction.get_dot_kernel(out_dtype, a.dtype, b.dtype)
    return kernel(
        _contiguous(a, stream), _contiguous(b, stream), stream=stream, allocator=allocator
    )


@_numpy_doc(dtype=_PROMOTED, returns="A 0-d array holding the sum of conj(a) * b.")
def vdot(a, b, dtype=None, stream=None, allocator=None) -> GPUArray:
    """dot with ``a`` complex-conjugated (numpy.vdot)."""
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


def _subset_minmax(what, subset, a, stream, allocator):
    _check_supported("subset_" + what, a)
    _check_indices("subset_" + what, subset)
    if subset.size == 0:
        name = "minimum" if what == "min" else "maximum"
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    kernel = reduction.get_subset_minmax_kernel(what, a.dtype, subset.dtype)
    return kernel(
        _contiguous(subset, stream), _contiguous(a, stream), stream=stream, allocator=allocator
    )


@_numpy_doc(returns="A 0-d array holding the result.")
def subset_min(subset, a, stream=None, allocator=None) -> GPUArray:
    """The smallest of the elements ``a[subset]``."""
    return _subset_minmax("min", subset, a, stream, allocator)


@_numpy_doc(returns="A 0-d array holding the result.")
def subset_max(subset, a, stream=None, allocator=None) -> GPUArray:
    """The largest of the elements ``a[subset]``."""
    return _subset_minmax("max", subset, a, stream, allocator)


@_numpy_doc(
    dtype=_PROMOTED, returns="A 0-d array holding the dot of ``a[subset]`` and ``b[subset]``."
)
def subset_dot(subset, a, b, dtype=None, stream=None, allocator=None) -> GPUArray:
    """The sum of a[subset]*b[subset]."""
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


class ReductionMixin:
    """GPUArray's reduction methods, NumPy's signatures (``x.sum(axis=0)``, ``x.argmax()``,
    ``x.var(ddof=1)``) plus ``stream=`` and ``allocator=``; ``x.any(stream)`` and
    ``x.all(stream, allocator)`` keep PyCUDA's positional order working."""

    def sum(
        self, axis=None, dtype=None, out=None, keepdims=False, stream=None, allocator=None
    ) -> GPUArray:
        return _reduce("sum", self, axis, dtype, out, keepdims, stream, allocator)

    def prod(
        self, axis=None, dtype=None, out=None, keepdims=False, stream=None, allocator=None
    ) -> GPUArray:
        return _reduce("prod", self, axis, dtype, out, keepdims, stream, allocator)

    def min(self, axis=None, out=None, keepdims=False, stream=None, allocator=None) -> GPUArray:
        return min(self, axis, out, keepdims, stream, allocator)

    def max(self, axis=None, out=None, keepdims=False, stream=None, allocator=None) -> GPUArray:
        return max(self, axis, out, keepdims, stream, allocator)

    def argmin(
        self, axis=None, out=None, *, keepdims=False, stream=None, allocator=None
    ) -> GPUArray:
        return _reduce("argmin", self, axis, None, out, keepdims, stream, allocator)

    def argmax(
        self, axis=None, out=None, *, keepdims=False, stream=None, allocator=None
    ) -> GPUArray:
        return _reduce("argmax", self, axis, None, out, keepdims, stream, allocator)

    def any(self, axis=None, out=None, keepdims=False, stream=None, allocator=None) -> GPUArray:
        return any(self, axis, out, keepdims, stream, allocator)

    def all(self, axis=None, out=None, keepdims=False, stream=None, allocator=None) -> GPUArray:
        return all(self, axis, out, keepdims, stream, allocator)

    def mean(
        self, axis=None, dtype=None, out=None, keepdims=False, stream=None, allocator=None
    ) -> GPUArray:
        return _reduce("mean", self, axis, dtype, out, keepdims, stream, allocator)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, stream=None,
            allocator=None) -> GPUArray:  # fmt: skip
        return _reduce("var", self, axis, dtype, out, keepdims, stream, allocator, ddof)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, stream=None,
            allocator=None) -> GPUArray:  # fmt: skip
        return _reduce("std", self, axis, dtype, out, keepdims, stream, allocator, ddof)
