"""Shared helpers of the GPU tests of cuplug.gpuarray: operands of every layout made from one host
array, values each operation is defined on, and comparison with NumPy's results (exact for
integers and bools, a few ulps for floating point)."""

from __future__ import annotations

import numpy as np
import pytest

from .dtype_matrix import ARRAY_DTYPES

DTYPES = ARRAY_DTYPES

# Relative tolerance by result dtype: elementary operations are exact in both (IEEE), the
# rest (pow, complex division) differ by a few ulps between CUDA's and the C library's.
RTOL = {
    np.dtype(np.float16): 2e-3,
    np.dtype(np.float32): 3e-6,
    np.dtype(np.float64): 1e-13,
    np.dtype(np.complex64): 1e-5,
    np.dtype(np.complex128): 1e-12,
}

LAYOUTS = [
    "contiguous",
    "fortran",
    "strided",
    "negative",
    "transposed",
    "broadcast_row",
    "broadcast_col",
    "zero_d",
    "empty",
]


def values(dtype, shape, rng, kind="general"):
    """Host values of `dtype` an operation of `kind` is defined on: "general", "divisor"
    (zeros included), "exponent" (0..4), "shift" (0..bits+2), "special" (NaN, inf, -0.0)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype.kind == "b":
        v = rng.random(n) < 0.5
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        if kind == "exponent":
            v = rng.integers(0, 5, n)
        elif kind == "shift":
            v = rng.integers(0, dtype.itemsize * 8 + 3, n)
        else:
            lo = max(info.min, -60)
            hi = min(info.max, 60)
            v = rng.integers(lo, hi + 1, n)
            if kind == "divisor":
                v[::5] = 0
    else:
        real = rng.standard_normal(n) * 8
        if kind == "exponent":
            real = rng.uniform(-2, 3, n)
        if kind == "divisor":
            real[::7] = 0
        if kind == "special" and dtype.kind == "f":
            specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])
            real[: len(specials) * 3 : 3] = specials[: len(real[: len(specials) * 3 : 3])]
        if dtype.kind == "c":
            imag = rng.standard_normal(n) * 8
            if kind == "exponent":
                imag = rng.uniform(-1, 1, n)
            v = real + 1j * imag
        else:
            v = real
    return np.asarray(v).astype(dtype).reshape(shape)


SHAPE = (5, 37)


def make(host_full, layout, role):
    """(host view, GPUArray view) of `layout` built from one host array of shape
    (10, 74): both views select the same elements, so NumPy's answer is the reference.
    role "x" is the first operand; broadcasting layouts shrink the other ("y") operand."""
    import cuplug.gpuarray as gpuarray

    g_full = gpuarray.to_gpu(host_full)
    if layout == "contiguous":
        h = host_full[:5, :37].copy()
        return h, gpuarray.to_gpu(h)
    if layout == "fortran":
        h = np.asfortranarray(host_full[:5, :37])
        return h, gpuarray.to_gpu(h)
    if layout == "strided":
        return host_full[::2, ::2][:, :37], g_full[::2, ::2][:, :37]
    if layout == "negative":
        return host_full[::-2, ::-1][:, :37], g_full[::-2, ::-1][:, :37]
    if layout == "transposed":
        t = np.ascontiguousarray(host_full.T)  # (74, 10)
        gt = gpuarray.to_gpu(t)
        return t[:37, :5].T, gt[:37, :5].T
    if layout == "broadcast_row":
        if role == "x":
            return host_full[:5, :37].copy(), gpuarray.to_gpu(host_full[:5, :37].copy())
        return host_full[0, :37].copy(), g_full[0, :37]
    if layout == "broadcast_col":
        if role == "x":
            return host_full[:5, :37].copy(), gpuarray.to_gpu(host_full[:5, :37].copy())
        return host_full[:5, :1].copy(), g_full[:5, :1]
    if layout == "zero_d":
        if role == "x":
            return host_full[:5, :37].copy(), gpuarray.to_gpu(host_full[:5, :37].copy())
        h = host_full[1, 2].reshape(())
        return h.copy(), gpuarray.to_gpu(h.copy())
    if layout == "empty":
        return host_full[:0, :37].copy(), g_full[:0, :37]
    raise ValueError(layout)


def check(got, want, rtol=None, what=""):
    """got (a GPUArray) equals NumPy's `want` in dtype, shape and values."""
    from cuplug.gpuarray import GPUArray

    want = np.asarray(want)
    assert isinstance(got, GPUArray), f"{what}: result is a {type(got).__name__}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy gives {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy gives {want.shape}"
    host = got.get()
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(host, want, err_msg=what)
    else:
        tol = RTOL[want.dtype] if rtol is None else rtol
        np.testing.assert_allclose(
            host, want, rtol=tol, atol=tol * 1e-3, equal_nan=True, err_msg=what
        )


def gpu_or_skip():
    import cuplug.driver as drv

    try:
        drv.init()
        if drv.Device.count() == 0:
            pytest.skip("no CUDA device")
    except drv.Error as e:  # pragma: no cover
        pytest.skip(f"no CUDA device: {e}")
