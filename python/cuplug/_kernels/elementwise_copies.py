"""PyCUDA's copying, filling and selecting ``pycuda.elementwise.get_*_kernel`` factories
(cuplug.elementwise re-exports them; the arithmetic ones are in
cuplug._kernels.elementwise_factories):
memoized prepared Functions taking PyCUDA's arguments then the element count ``n``, cached per
context. ``get_take_kernel`` / ``get_take_put_kernel`` return texture references, which CUDA 12
removed: they raise NotSupportedError.
"""

from __future__ import annotations

import numpy as np

from cuplug._core import NotSupportedError
from cuplug._driver.memoize import context_dependent_memoize
from cuplug._dtypes import dtype_to_ctype
from cuplug._kernels.cargs import VectorArg
from cuplug._kernels.elementwise import get_elwise_kernel, get_elwise_module

__all__ = [
    "get_arange_kernel",
    "get_conj_kernel",
    "get_copy_kernel",
    "get_fill_kernel",
    "get_if_positive_kernel",
    "get_imag_kernel",
    "get_logical_not_kernel",
    "get_put_kernel",
    "get_real_kernel",
    "get_reverse_kernel",
    "get_take_kernel",
    "get_take_put_kernel",
    "get_where_kernel",
]


def _kernel(arguments, operation, name, preamble=""):
    return get_elwise_kernel(arguments, operation, name, preamble=preamble)


def _ct(dtype):
    return dtype_to_ctype(np.dtype(dtype))


_TEXREF_GONE = (
    "texture references were removed in CUDA 12, and the kernel it returns reads its source "
    "through one; use GPUArray.take / cuplug.gpuarray.multi_take_put, or index in a kernel"
)


def get_take_kernel(dtype, idx_dtype, vec_count=1):
    """Raises NotSupportedError: PyCUDA's take kernel reads through texture references.

    Parameters
    ----------
    dtype, idx_dtype : numpy.dtype
        The element and index types.
    vec_count : int
        How many arrays one launch serves.
    """
    raise NotSupportedError(f"get_take_kernel: {_TEXREF_GONE}")


def get_take_put_kernel(dtype, idx_dtype, with_offsets, vec_count=1):
    """Raises NotSupportedError: PyCUDA's take-put kernel reads through texture references.

    Parameters
    ----------
    dtype, idx_dtype : numpy.dtype
        The element and index types.
    with_offsets : bool
        Whether source offsets are passed.
    vec_count : int
        How many arrays one launch serves.
    """
    raise NotSupportedError(f"get_take_put_kernel: {_TEXREF_GONE}")


@context_dependent_memoize
def get_put_kernel(dtype, idx_dtype, vec_count=1):
    """``dest<k>[gmem_dest_idx[i]] = src<k>[i]`` for k < vec_count; prepared
    ``P`` + 2*vec_count ``P`` + ``n``.

    Parameters
    ----------
    dtype, idx_dtype : numpy.dtype
        The element and index types.
    vec_count : int
        How many (dest, src) pairs.
    """
    args = (
        [VectorArg(idx_dtype, "gmem_dest_idx")]
        + [VectorArg(dtype, f"dest{k}") for k in range(vec_count)]
        + [VectorArg(dtype, f"src{k}") for k in range(vec_count)]
    )
    body = f"{_ct(idx_dtype)} dest_idx = gmem_dest_idx[i];\n" + "\n".join(
        f"dest{k}[dest_idx] = src{k}[i];" for k in range(vec_count)
    )
    func = get_elwise_module(args, body, "put").get_function("put")
    func.prepare("P" + 2 * vec_count * "P" + np.dtype(np.uintp).char)
    return func


@context_dependent_memoize
def get_copy_kernel(dtype_dest, dtype_src):
    """``dest[i] = src[i]``: prepared (dest, src, n).

    Parameters
    ----------
    dtype_dest, dtype_src : numpy.dtype
        The destination's and the source's element types.
    """
    return _kernel(f"{_ct(dtype_dest)} *dest, {_ct(dtype_src)} *src", "dest[i] = src[i]", "copy")


@context_dependent_memoize
def get_fill_kernel(dtype):
    """``z = a``: prepared (a, z, n).

    Parameters
    ----------
    dtype : numpy.dtype
        The element type.
    """
    return _kernel(f"{_ct(dtype)} a, {_ct(dtype)} *z", "z[i] = a", "fill")


@context_dependent_memoize
def get_reverse_kernel(dtype):
    """``z[i] = y[n-1-i]``: prepared (y, z, n).

    Parameters
    ----------
    dtype : numpy.dtype
        The element type.
    """
    return _kernel(f"{_ct(dtype)} *y, {_ct(dtype)} *z", "z[i] = y[n-1-i]", "reverse")


def _complex_part(fn, dtype, out_dtype, name):
    return _kernel(
        f"{_ct(dtype)} *y, {_ct(out_dtype)} *z",
        f"z[i] = {fn}(y[i])",
        name,
        preamble="#include <pycuda-complex.hpp>",
    )


@context_dependent_memoize
def get_real_kernel(dtype, real_dtype):
    """``z = real(y)``: prepared (y, z, n).

    Parameters
    ----------
    dtype, real_dtype : numpy.dtype
        The complex input's and the real result's dtypes.
    """
    return _complex_part("pycuda::real", dtype, real_dtype, "real")


@context_dependent_memoize
def get_imag_kernel(dtype, real_dtype):
    """``z = imag(y)``: prepared (y, z, n).

    Parameters
    ----------
    dtype, real_dtype : numpy.dtype
        The complex input's and the real result's dtypes.
    """
    return _complex_part("pycuda::imag", dtype, real_dtype, "imag")


@context_dependent_memoize
def get_conj_kernel(dtype, conj_dtype):
    """``z = conj(y)``: prepared (y, z, n).

    Parameters
    ----------
    dtype, conj_dtype : numpy.dtype
        The input's and the result's dtypes.
    """
    return _complex_part("pycuda::conj", dtype, conj_dtype, "conj")


@context_dependent_memoize
def get_arange_kernel(dtype):
    """``z = start + i*step``: prepared (z, start, step, n).

    Parameters
    ----------
    dtype : numpy.dtype
        The element type.
    """
    t = _ct(dtype)
    return _kernel(f"{t} *z, {t} start, {t} step", "z[i] = start + i*step", "arange")


def _select(crit_dtype, dtype, test, name):
    return _kernel(
        [
            VectorArg(crit_dtype, "crit"),
            VectorArg(dtype, "then_"),
            VectorArg(dtype, "else_"),
            VectorArg(dtype, "result"),
        ],
        f"result[i] = crit[i] {test} ? then_[i] : else_[i]",
        name,
    )


@context_dependent_memoize
def get_if_positive_kernel(crit_dtype, dtype):
    """``result = crit > 0 ? then_ : else_``: prepared (crit, then_, else_, result, n).

    Parameters
    ----------
    crit_dtype, dtype : numpy.dtype
        The criterion's and the values' dtypes.
    """
    return _select(crit_dtype, dtype, "> 0", "if_positive")


@context_dependent_memoize
def get_where_kernel(crit_dtype, dtype):
    """``result = crit != 0 ? then_ : else_``: prepared (crit, then_, else_, result, n).

    Parameters
    ----------
    crit_dtype, dtype : numpy.dtype
        The criterion's and the values' dtypes.
    """
    return _select(crit_dtype, dtype, "!= 0", "if_positive")


@context_dependent_memoize
def get_logical_not_kernel(dtype_x, dtype_out):
    """``out = (x == 0)``: prepared (x, out, n).

    Parameters
    ----------
    dtype_x, dtype_out : numpy.dtype
        The input's and the result's dtypes.
    """
    return _kernel(
        [VectorArg(dtype_x, "x"), VectorArg(dtype_out, "out")],
        "out[i] = (x[i] == 0)",
        "logical_not",
    )
