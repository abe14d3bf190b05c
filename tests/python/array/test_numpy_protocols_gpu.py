"""NumPy's functions on GPUArrays on a real GPU, against NumPy on the same host data: every ufunc
of the operation table over float, complex and integer dtypes, out=, reduce and accumulate, and
the array functions cuplug implements."""

from __future__ import annotations

import numpy as np
import pytest

from cuplug._array import numpy_protocols

pytestmark = pytest.mark.real_gpu

DTYPES = [np.float32, np.float64, np.complex64, np.int32, np.uint8, np.bool_]
TOL = {"f": (2e-5, 1e-6), "c": (5e-5, 1e-6)}


def host(dtype, shape=(3, 17), seed=0, low=0.1, high=0.9):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(1, 5, shape).astype(dtype)
    values = rng.uniform(low, high, shape)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(low, high, shape)
    return values.astype(dtype)


def close(got, want):
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    got = got.get() if hasattr(got, "get") else np.asarray(got)
    kind = want.dtype.kind
    if kind in TOL:
        rtol, atol = TOL[kind] if want.dtype.itemsize < 8 or kind == "c" else (1e-12, 1e-14)
        if want.dtype == np.float16:  # small ints and bools compute in float16, as in NumPy
            rtol, atol = 2e-3, 1e-3
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def numpy_result(ufunc, xs):
    with np.errstate(all="ignore"):
        try:
            return ufunc(*xs)
        except TypeError:
            return None


UFUNCS = sorted(numpy_protocols._UFUNCS, key=lambda u: u.__name__)


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_ufunc_matches_numpy(gpu, ufunc, dtype):
    from cuplug import gpuarray

    xs = [host(dtype, seed=s) for s in range(ufunc.nin)]
    if ufunc is np.ldexp:
        xs[1] = host(np.int32, seed=5)
    want = numpy_result(ufunc, xs)
    gs = [gpuarray.to_gpu(x) for x in xs]
    if want is None:  # NumPy has no loop for these dtypes: neither has cuplug
        with pytest.raises(TypeError):
            ufunc(*gs)
        return
    got = ufunc(*gs)
    if ufunc.nout == 1:
        close(got, want)
    else:
        for g, w in zip(got, want):
            close(g, w)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64], ids=str)
def test_scalars_out_and_broadcasting(gpu, dtype):
    from cuplug import gpuarray

    a, row = host(dtype), host(dtype, shape=(17,), seed=3)
    ga, grow = gpuarray.to_gpu(a), gpuarray.to_gpu(row)
    close(np.add(ga, grow), a + row)
    close(np.multiply(ga, 2), a * 2)
    close(np.float32(2) * ga, np.float32(2) * a)
    out = gpuarray.empty_like(ga)
    assert np.subtract(ga, grow, out=out) is out
    close(out, a - row)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=str)
def test_reduce_accumulate_and_reductions(gpu, dtype):
    from cuplug import gpuarray

    a = host(dtype, shape=(6, 40))
    g = gpuarray.to_gpu(a)
    close(np.add.reduce(g), np.add.reduce(a))
    close(np.maximum.reduce(g, axis=1), np.maximum.reduce(a, axis=1))
    close(np.add.accumulate(g.ravel()), np.add.accumulate(a.ravel()))
    close(np.sum(g, axis=0), np.sum(a, axis=0))
    close(np.sum(g), np.sum(a))
    close(np.max(g, axis=1, keepdims=True), np.max(a, axis=1, keepdims=True))
    close(np.argmin(g, axis=1), np.argmin(a, axis=1))
    close(np.cumsum(g, axis=1), np.cumsum(a, axis=1))
    if dtype != np.int32:
        close(np.mean(g, axis=0), np.mean(a, axis=0))
        close(np.std(g), np.std(a))


def test_array_functions_match_numpy(gpu):
    from cuplug import gpuarray

    a, b = host(np.float32, (4, 5)), host(np.float32, (4, 5), seed=1)
    ga, gb = gpuarray.to_gpu(a), gpuarray.to_gpu(b)
    close(np.concatenate([ga, gb]), np.concatenate([a, b]))
    close(np.concatenate([ga, gb], axis=1), np.concatenate([a, b], axis=1))
    close(np.stack([ga, gb], axis=1), np.stack([a, b], axis=1))
    close(np.where(ga > gb, ga, gb), np.where(a > b, a, b))
    close(np.clip(ga, 0.3, 0.6), np.clip(a, 0.3, 0.6))
    close(np.reshape(ga, (5, 4)), np.reshape(a, (5, 4)))
    close(np.transpose(ga), np.transpose(a))
    close(np.ravel(np.transpose(ga)), np.ravel(np.transpose(a)))
    close(np.zeros_like(ga), np.zeros_like(a))
    close(np.ones_like(ga, dtype=np.int16), np.ones_like(a, dtype=np.int16))
    v, w = a.ravel(), b.ravel()
    close(np.dot(gpuarray.to_gpu(v), gpuarray.to_gpu(w)), np.dot(v, w))
    close(np.round(ga, 2), np.round(a, 2))
