"""Whole-array reductions on the GPU against NumPy: every dtype, sizes around the block and
split boundaries, strided inputs, NaN, determinism and float32 accuracy."""

from __future__ import annotations

import numpy as np
import pytest
from support.dtype_matrix import ARRAY_DTYPES

import cuplug.gpuarray as gpuarray
from cuplug import reduction

pytestmark = [pytest.mark.gpu, pytest.mark.real_gpu]

NUMERIC = [np.dtype(d) for d in ARRAY_DTYPES]
SIZES = [0, 1, 255, 256, 4096, 4097, 1 << 20, 10**6 + 3]


@pytest.fixture(scope="module", autouse=True)
def _ctx(gpu_ctx):
    yield


def host(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return rng.random(n) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 7, n).astype(dtype)
    if dtype.kind == "c":
        return (rng.random(n) + 1j * rng.random(n)).astype(dtype)
    return rng.random(n).astype(dtype)


def close(got, want, dtype):
    if dtype.kind in "biu":
        assert got == want
    else:
        # Keyed by the precision of one component: complex64 has float32's.
        rtol = {2: 5e-3, 4: 1e-6, 8: 1e-12}[np.finfo(dtype).dtype.itemsize]
        np.testing.assert_allclose(got, want, rtol=rtol * 10)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_sum_dot_any_all_min_max_match_numpy(dtype, n):
    h = host(dtype, n)
    g = gpuarray.to_gpu(h)
    s = gpuarray.sum(g).get()
    assert s.dtype == np.sum(h).dtype
    close(s, np.sum(h, dtype=np.float64 if dtype.kind == "f" else None).astype(s.dtype), s.dtype)
    close(gpuarray.dot(g, g).get(), np.dot(h, h), np.result_type(dtype, dtype))
    if dtype.kind == "c":
        close(gpuarray.vdot(g, g).get(), np.vdot(h, h), dtype)
    assert gpuarray.any(g).get() == np.any(h)
    assert gpuarray.all(g).get() == np.all(h)
    if n and dtype.kind != "c":
        assert gpuarray.min(g).get() == h.min()
        assert gpuarray.max(g).get() == h.max()


def test_strided_and_subset_reductions():
    h = host(np.dtype(np.float64), 100_000)
    g = gpuarray.to_gpu(h)
    close(gpuarray.sum(g[::-3]).get(), h[::-3].sum(), np.dtype(np.float64))
    idx = np.arange(0, 100_000, 7, dtype=np.int32)
    gi = gpuarray.to_gpu(idx)
    close(gpuarray.subset_sum(gi, g).get(), h[idx].sum(), np.dtype(np.float64))
    close(gpuarray.subset_dot(gi, g, g).get(), h[idx] @ h[idx], np.dtype(np.float64))
    assert gpuarray.subset_max(gi, g).get() == h[idx].max()
    assert gpuarray.subset_min(gi, g).get() == h[idx].min()


def test_nan_wins_min_and_max():
    h = np.arange(10_000, dtype=np.float32)
    h[5000] = np.nan
    g = gpuarray.to_gpu(h)
    assert np.isnan(gpuarray.min(g).get()) and np.isnan(gpuarray.max(g).get())


def test_float32_sums_are_deterministic_and_more_accurate_than_numpy():
    rng = np.random.default_rng(7)
    n = 10**7
    h = (rng.standard_normal(n) * 10.0 ** rng.integers(-4, 5, n)).astype(np.float32)
    exact = np.sum(h.astype(np.float64))
    g = gpuarray.to_gpu(h)
    first = gpuarray.sum(g).get()
    for _ in range(3):
        assert gpuarray.sum(g).get().tobytes() == first.tobytes()
    assert abs(float(first) - exact) <= abs(float(np.sum(h)) - exact) + abs(exact) * 1e-7


def test_reduction_kernel_with_out_view_and_stream():
    import cuplug.driver as drv

    krnl = reduction.ReductionKernel(
        np.float32, "0", "a+b", "x[i]*y[i]", arguments="const float *x, const float *y"
    )
    h = host(np.dtype(np.float32), 50_000)
    g = gpuarray.to_gpu(h)
    sums = gpuarray.zeros((4,), np.float32)
    s = drv.Stream()
    krnl(g, g, out=sums[2], stream=s)
    s.synchronize()
    close(sums.get()[2], np.dot(h.astype(np.float64), h), np.dtype(np.float32))
    assert sums.get()[0] == 0
