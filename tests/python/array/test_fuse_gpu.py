"""cuplug.fuse on a real GPU: fused results against NumPy and against the same code unfused,
dtype by dtype (float32, float64, int32, complex64), with broadcast, strided and scalar
operands, two outputs, where and casts. Tracing, sources and errors: test_fuse.py."""

from __future__ import annotations

import numpy as np
import pytest

import cuplug
from cuplug import cumath, gpuarray

pytestmark = pytest.mark.real_gpu

DTYPES = [np.float32, np.float64, np.int32, np.complex64]
TOL = {"f": (2e-5, 1e-6), "c": (5e-5, 1e-6)}


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(-5, 6, shape).astype(dtype)
    v = rng.uniform(-2, 2, shape)
    if dtype.kind == "c":
        v = v + 1j * rng.uniform(-2, 2, shape)
    return v.astype(dtype)


def check(got, want):
    got = got.get() if hasattr(got, "get") else got
    want = want.get() if hasattr(want, "get") else np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "fc":
        rtol, atol = TOL["c" if want.dtype.kind == "c" else "f"]
        if want.dtype.itemsize >= 8 and want.dtype.kind == "f":
            rtol, atol = 1e-12, 1e-14
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def poly(x, y):
    return (x * y + 3) * x - y


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_arithmetic_matches_numpy_and_unfused(gpu, dtype):
    xh, yh = sample(dtype, (5, 37), 1), sample(dtype, (5, 37), 2)
    x, y = gpuarray.to_gpu(xh), gpuarray.to_gpu(yh)
    fused = cuplug.fuse(poly)
    check(fused(x, y), poly(xh, yh))
    check(fused(x, y), poly(x, y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_gauss_with_scalars(gpu, dtype):
    def gauss(x, a, b):
        return cumath.exp(-x * x / 2) * a + b

    xh = sample(dtype, 1000, 3)
    x = gpuarray.to_gpu(xh)
    fused = cuplug.fuse(gauss)
    check(fused(x, 2.0, 1.0), np.exp(-xh * xh / 2) * 2.0 + 1.0)
    check(fused(x, 3.0, -1.0), gauss(x, 3.0, -1.0))  # new scalar values, same kernel
    check(fused(x, np.float64(2), 1), gauss(x, np.float64(2), 1))  # a strong NumPy scalar


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_broadcast_and_strided_operands(gpu, dtype):
    ah = sample(dtype, (12, 40), 4)
    rowh = sample(dtype, (1, 10), 5)
    a = gpuarray.to_gpu(ah)[::3, 2::4]
    row = gpuarray.to_gpu(rowh)
    f = cuplug.fuse(lambda a, r: a * r - r)
    want = ah[::3, 2::4] * rowh - rowh
    check(f(a, row), want)
    check(f(a.T, row.T.copy()), ah[::3, 2::4].T * rowh.T - rowh.T)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_where_comparisons_casts_abs(gpu, dtype):
    xh, yh = sample(dtype, 300, 6), sample(dtype, 300, 7)
    x, y = gpuarray.to_gpu(xh), gpuarray.to_gpu(yh)

    def f(x, y):
        return gpuarray.where(x > y, abs(x), -y).astype(np.float64) + gpuarray.maximum(x, y)

    check(
        cuplug.fuse(f)(x, y),
        np.where(xh > yh, abs(xh), -yh).astype(np.float64) + np.maximum(xh, yh),
    )
    check(cuplug.fuse(lambda x, y: x <= y)(x, y), xh <= yh)


def test_mixed_dtypes_follow_numpy(gpu):
    xh = sample(np.int32, 64, 8)
    yh = sample(np.float32, 64, 9)
    x, y = gpuarray.to_gpu(xh), gpuarray.to_gpu(yh)
    f = cuplug.fuse(lambda x, y: cumath.sin(x) * y + x)
    check(f(x, y), np.sin(xh) * yh + xh)  # sin(int32) is float64


def test_two_outputs(gpu):
    xh = sample(np.float32, 100, 10)
    x = gpuarray.to_gpu(xh)
    m, e = cuplug.fuse(lambda x: cumath.frexp(x * 3))(x)
    wm, we = np.frexp(xh * 3)
    check(m, wm)
    check(e, we)
