"""PyCUDA's ``pycuda.gpuarray`` for cuplug: GPUArray and its module functions, with NumPy's
broadcasting, promotion and strided operands (the work is in cuplug._array)."""

from __future__ import annotations

from cuplug._array.core import ArrayFlags, GPUArray
from cuplug._array.creation import (
    arange,
    empty,
    empty_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from cuplug._array.cumulative import cumprod, cumsum
from cuplug._array.geometry import splay
from cuplug._array.interop import asarray, from_dlpack
from cuplug._array.manipulation import (
    concatenate,
    multi_put,
    multi_take,
    multi_take_put,
    reshape,
    stack,
    take,
    transpose,
)
from cuplug._array.math import (
    clip,
    if_positive,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    where,
)
from cuplug._array.reductions import (
    all,
    any,
    argmax,
    argmin,
    dot,
    max,
    mean,
    min,
    nanmax,
    nanmean,
    nanmin,
    nanprod,
    nanstd,
    nansum,
    nanvar,
    prod,
    std,
    subset_dot,
    subset_max,
    subset_min,
    subset_sum,
    sum,
    var,
    vdot,
)
from cuplug._array.transfers import (
    _memcpy_discontig,  # noqa: F401 (PyCUDA's, used by libraries)
    to_device,
    to_gpu,
    to_gpu_async,
)
from cuplug._array.vec import vec
from cuplug._core import _array as _core_array
from cuplug._public import public_dir as _public_dir

__all__ = [
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "ArrayFlags",
    "asarray",
    "clip",
    "concatenate",
    "cumprod",
    "cumsum",
    "dot",
    "empty",
    "empty_like",
    "from_dlpack",
    "GPUArray",
    "if_positive",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multi_put",
    "multi_take",
    "multi_take_put",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "ones",
    "ones_like",
    "prod",
    "reshape",
    "splay",
    "stack",
    "std",
    "subset_dot",
    "subset_max",
    "subset_min",
    "subset_sum",
    "sum",
    "take",
    "to_device",
    "to_gpu",
    "to_gpu_async",
    "transpose",
    "var",
    "vdot",
    "vec",
    "where",
    "zeros",
    "zeros_like",
]


def _allocator_name():
    """The allocator backend arrays use now (a caching pool unless one was chosen)."""
    return _core_array.allocator_name()


__dir__ = _public_dir(__all__)
