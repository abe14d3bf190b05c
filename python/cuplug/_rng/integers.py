"""Integer values of any integer dtype from a stream (stream.py), for cuplug.random.Generator: the
rng backends make 32-bit words and uint32 Poisson counts only.

``fill_integers``: each value takes two 32-bit words x (one 64-bit word) and is
low + floor(x * span / 2**64), off from uniform by at most span / 2**64 (an elementwise kernel
per dtype). ``fill_poisson``: uint32 counts converted to the target's dtype."""

from __future__ import annotations

import numpy as np

from cuplug import _core
from cuplug._array.core import GPUArray

__all__ = ["INTEGER_CTYPES", "fill_integers", "fill_poisson"]

INTEGER_CTYPES = {
    np.dtype(np.int8): "signed char",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int16): "short",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.int32): "int",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.int64): "long long",
    np.dtype(np.uint64): "unsigned long long",
}
# dtype -> its kernel object (the kernel object compiles and caches per context itself).
_kernels = {}


def _integer_kernel(dtype):
    kernel = _kernels.get(dtype)
    if kernel is None:
        # Late: the elementwise engine compiles, which importing cuplug.random need not load.
        from cuplug._kernels.elementwise import ElementwiseKernel

        ctype = INTEGER_CTYPES[dtype]
        # span == 0 means 2^64: every word maps to itself.
        kernel = ElementwiseKernel(
            f"unsigned long long *words, {ctype} *out, unsigned long long span, long long low",
            f"out[i] = ({ctype})(low + (long long)(span ? __umul64hi(words[i], span) : words[i]))",
            f"cuplug_random_integers_{dtype.name}",
        )
        _kernels[dtype] = kernel
    return kernel


def fill_integers(source, result, low, high, stream=None):
    """Integers in [low, high) from the stream `source` into the GPUArray `result` (any dtype of
    INTEGER_CTYPES that holds the range; high - low up to 2**64)."""
    words = GPUArray(result.shape, np.uint64)
    source.generate("raw_bits", "uint32", int(words.gpudata), 2 * words.size, stream)
    span = high - low  # up to 2^64: 0 stands for 2^64 below
    _integer_kernel(result.dtype)(
        words, result, np.uint64(span % (1 << 64)), np.int64(low), stream=stream
    )
    return result


def fill_poisson(source, result, lam, stream=None, what="out", fresh=False):
    """Poisson counts of mean `lam` from `source` for `result`, a GPUArray of any integer dtype:
    uint32 ones directly, others through a uint32 array converted to a new one. That new one is
    returned in place of `result` when `fresh` (a result nobody else holds), else copied into
    `result`."""
    if result.dtype == np.uint32:
        return source.fill_poisson(result, lam, stream, what)
    counts = GPUArray(result.shape, np.uint32)
    source.fill_poisson(counts, lam, stream, what)
    converted = counts.astype(result.dtype, stream=stream)
    if fresh:
        return converted
    if stream is None:
        _core.memcpy_dtod(result.gpudata, converted.gpudata, result.nbytes)
    else:
        _core.memcpy_dtod_async(result.gpudata, converted.gpudata, result.nbytes, stream)
        stream.synchronize()  # `converted` goes back to the pool when this returns
    return result
