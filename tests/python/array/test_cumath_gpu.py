"""cuplug.cumath on a real GPU against NumPy: every function x float, complex and some integer
dtypes; then the layouts (strided, broadcast, scalars, 0-d, empty), out= and stream= on a few."""

import warnings

import numpy as np
import pytest

from cuplug import cumath
from cuplug._codegen import ops

pytestmark = pytest.mark.real_gpu

DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int16, np.int32]
TOL = {
    np.dtype(np.float16): (2e-3, 1e-3),
    np.dtype(np.float32): (2e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-14),
    np.dtype(np.complex64): (5e-5, 1e-6),
    np.dtype(np.complex128): (1e-11, 1e-13),
}
# Inputs inside every function's domain (arccosh needs >= 1; the rest take (0, 1)).
LOW_HIGH = {"acosh": (1.1, 3.0)}


def sample(fn, dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    low, high = LOW_HIGH.get(fn.name, (0.1, 0.9))
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(1, 4, shape).astype(dtype)
    values = rng.uniform(low, high, shape)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(low, high, shape)
    return values.astype(dtype)


def operands(fn, dtype, shape=(4, 33)):
    xs = [sample(fn, dtype, shape, seed) for seed in range(fn.nin)]
    if fn.name == "ldexp":
        xs[1] = np.arange(np.prod(shape)).reshape(shape).astype(np.int32) % 7 - 3
    return xs


def reference(fn, xs):
    """NumPy's answer, and for cuplug's complex extensions the documented meaning."""
    x = xs[0]
    if x.dtype.kind == "c" and fn.name == "fabs":
        return (np.abs(x),)
    if x.dtype.kind == "c" and fn.name in ("ceil", "floor"):
        f = getattr(np, fn.name)
        return ((f(x.real) + 1j * f(x.imag)).astype(x.dtype),)
    with np.errstate(all="ignore"):
        out = fn.ufunc(*xs)
    return out if isinstance(out, tuple) else (out,)


def check(got, want):
    got = got.get()
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if want.dtype.kind in "fc":
        rtol, atol = TOL[np.dtype(want.dtype)]
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def cases():
    for fn in cumath.FUNCTIONS:
        for dtype in DTYPES:
            yield pytest.param(fn, np.dtype(dtype), id=f"{fn.name}-{np.dtype(dtype).name}")


@pytest.mark.sweep
@pytest.mark.parametrize("fn, dtype", list(cases()))
def test_function_matches_numpy(gpu, fn, dtype):
    from cuplug import gpuarray

    xs = operands(fn, dtype)
    try:
        loop = ops.loops(fn, xs)
    except TypeError as e:
        pytest.skip(f"not defined: {e}")
    del loop
    results = getattr(cumath, fn.name)(*[gpuarray.to_gpu(x) for x in xs])
    results = results if isinstance(results, tuple) else (results,)
    for got, want in zip(results, reference(fn, xs)):
        check(got, want)


def test_strided_views_broadcast_and_scalars(gpu):
    from cuplug import gpuarray

    x = np.random.default_rng(1).uniform(0.1, 0.9, (6, 40)).astype(np.float32)
    gx = gpuarray.to_gpu(x)
    check(cumath.sin(gx[::2, ::-3]), np.sin(x[::2, ::-3]))
    check(cumath.exp(gx.T), np.exp(x.T))
    row = np.linspace(0.2, 0.8, 40).astype(np.float64)
    check(cumath.arctan2(gx, gpuarray.to_gpu(row)), np.arctan2(x, row))
    check(cumath.hypot(gx[1:, ::2], 3.0), np.hypot(x[1:, ::2], 3.0))
    check(cumath.power(2.0, gx), np.power(2.0, x))
    check(cumath.power(gx, np.float64(2.0)), np.power(x, np.float64(2.0)))


def test_zero_dimensional_and_empty(gpu):
    from cuplug import gpuarray

    z = np.array(0.5, np.float64)
    check(cumath.sqrt(gpuarray.to_gpu(z)), np.sqrt(z))
    e = np.zeros((0, 3), np.float32)
    check(cumath.cos(gpuarray.to_gpu(e)), np.cos(e))


def test_out_and_stream(gpu):
    import cuplug.driver as drv
    from cuplug import gpuarray

    x = np.linspace(0.1, 0.9, 1000).astype(np.float32)
    gx = gpuarray.to_gpu(x)
    out = gpuarray.empty((1000,), np.float64)  # float32 results cast to float64: same_kind
    s = drv.Stream()
    assert cumath.tanh(gx, out=out, stream=s) is out
    s.synchronize()
    got = out.get()
    assert got.dtype == np.float64  # float32 results, stored as float64
    np.testing.assert_allclose(got, np.tanh(x), rtol=2e-5)
    view = gpuarray.zeros((2000,), np.float32)[::2]
    cumath.sin(gx, out=view)
    check(view, np.sin(x))
    mant, expo = gpuarray.empty_like(gx), gpuarray.empty((1000,), np.int32)
    assert cumath.frexp(gx, out=(mant, expo)) == (mant, expo)
    check(cumath.ldexp(mant, expo), x)
    with pytest.raises(TypeError, match="same_kind"):
        cumath.sin(gx, out=gpuarray.empty((1000,), np.int32))
    with pytest.raises(ValueError, match=r"output 'z' of shape \(3,\) float32 does not match"):
        cumath.sin(gx, out=gpuarray.empty((3,), np.float32))


def test_pycuda_positional_stream_or_out_is_honoured_with_a_warning(gpu):
    from cuplug import gpuarray

    x = np.linspace(0.1, 0.9, 10).astype(np.float32)
    gx, out = gpuarray.to_gpu(x), gpuarray.empty((10,), np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cumath.exp(gx, out) is out
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    check(out, np.exp(x))


def test_pycuda_float_exponents_of_ldexp(gpu):
    from cuplug import gpuarray

    sig = np.array([0.5, 0.75, -0.5], np.float32)
    exps = np.array([1.0, 2.9, -1.0], np.float32)  # PyCUDA passed floats; truncated to int
    got = cumath.ldexp(gpuarray.to_gpu(sig), gpuarray.to_gpu(exps))
    check(got, np.ldexp(sig, exps.astype(np.int32)))


def test_errors_name_the_problem(gpu):
    from cuplug import gpuarray

    gx = gpuarray.to_gpu(np.ones(4, np.complex64))
    with pytest.raises(TypeError, match=r"cumath\.fmod is not defined for complex64"):
        cumath.fmod(gx, gx)
    with pytest.raises(TypeError, match="needs a GPUArray operand"):
        cumath.sin(np.ones(3))
    with pytest.raises(ValueError, match=r"could not be broadcast.*\(4,\) complex64 and \(3,\)"):
        cumath.power(gx, gpuarray.to_gpu(np.ones(3, np.complex64)))
