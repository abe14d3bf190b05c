"""NumPy's reductions over axes on the GPU against NumPy: every reduction x dtype over every layout
class and axis form, edge shapes, the 16k x 16k sums (values and bandwidth), bit-for-bit
determinism, float32 accuracy, NaN rules, streams, PyCUDA's positional forms and more than
2**32 elements."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from support.dtype_matrix import ARRAY_DTYPES
from support.reduction_reference import (
    assert_matches,
    host_values,
    layouts,
    numpy_result,
    reference,
)

import cuplug.gpuarray as gpuarray
from cuplug._codegen import axis_reduction as ar

pytestmark = [pytest.mark.gpu, pytest.mark.real_gpu]

DTYPES = [np.dtype(d) for d in ARRAY_DTYPES]
NO_COMPLEX = ("min", "max", "nanmin", "nanmax", "argmin", "argmax")
#: Every reduction over these runs in the compute-sanitizer pass (tools/gpu_check.sh leaves the
#: `sweep` tests out): the other dtypes repeat the same kernels.
CORE = (np.dtype(np.float32), np.dtype(np.int32))


@pytest.fixture(scope="module", autouse=True)
def _ctx(gpu_ctx):
    yield


def on_gpu(x):
    """(GPUArray, x): a device view with x's layout (strides, offset into its allocation)."""
    base = x
    while isinstance(base.base, np.ndarray):
        base = base.base
    if not (base.flags.c_contiguous or base.flags.f_contiguous):
        x = np.ascontiguousarray(x)
        return gpuarray.to_gpu(x), x
    whole = gpuarray.to_gpu(np.ravel(base, order="K"))  # the bytes in memory order
    return whole._view(x.shape, x.strides, x.ctypes.data - base.ctypes.data), x


def run(kind, g, **kwargs):
    return getattr(gpuarray, kind)(g, **kwargs)


def check(kind, x, what, **kwargs):
    g, x = on_gpu(x)
    want = numpy_result(kind, x, **kwargs)
    if isinstance(want, Exception):
        with pytest.raises(type(want)):
            run(kind, g, **kwargs)
        return
    got = run(kind, g, **kwargs)
    assert isinstance(got, gpuarray.GPUArray), what
    assert_matches(
        got.get(),
        reference(kind, x, kwargs.get("axis"), kwargs.get("keepdims", False), None, 0),
        f"{what} {kwargs}",
    )


def _params():
    for kind, dt in itertools.product(ar.KINDS, DTYPES):
        if dt.kind == "c" and kind in NO_COMPLEX:
            continue
        marks = () if dt in CORE else (pytest.mark.sweep,)
        yield pytest.param(kind, dt, marks=marks, id=f"{kind}-{dt}")


@pytest.mark.parametrize("kind,dtype", list(_params()))
def test_every_reduction_dtype_layout_and_axis_matches_numpy(kind, dtype):
    rng = np.random.default_rng(11)
    base = host_values(dtype, (6, 70, 9), rng, kind)
    axes = [None, 1, -1] if kind in ("argmin", "argmax") else [None, 0, -1, (0, 2), (1, 2)]
    for k, ((name, x), axis) in enumerate(itertools.product(layouts(base), axes)):
        check(kind, x, f"{kind} {dtype} {name}", axis=axis, keepdims=bool(k % 2))


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "argmax", "any", "mean", "var", "nanmin"])
def test_edge_shapes_match_numpy(kind):
    rng = np.random.default_rng(2)
    cases = [
        ((), None), ((), 0), ((5,), 0), ((0, 4), 1), ((4, 0), 0), ((4, 0), 1), ((0,), None),
        ((1, 1, 7), 2), ((3, 4), ()), ((33, 1, 20), (0, 1)), ((2,) * 12, (0, 3, 5, 11)),
    ]  # fmt: skip
    for shape, axis in cases:
        if kind == "argmax" and isinstance(axis, tuple):
            continue
        x = host_values(np.dtype(np.float32), shape, rng, kind)
        for keepdims in (False, True):
            check(kind, x, f"{shape}", axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("n", [1, 255, 256, 257, 1024, 4095, 4096, 4097, 65537, 10**6 + 3])
def test_sizes_around_block_and_split_boundaries(n):
    rng = np.random.default_rng(n)
    for kind in ("sum", "argmin", "var", "all"):
        x = host_values(np.dtype(np.float32), (n,), rng, kind)
        check(kind, x, f"n={n}", axis=None)
        check(kind, x.reshape(1, n), f"(1, {n})", axis=1)
        if n % 2 == 0:
            check(kind, x.reshape(2, n // 2), f"(2, {n // 2})", axis=0)
            check(kind, x.reshape(n // 2, 2), f"({n // 2}, 2)", axis=0)


@pytest.mark.parametrize("kind", ["sum", "max", "argmin", "mean", "var", "any"])
def test_repeated_calls_with_only_the_array_match_numpy(kind):
    # The second call of a layout goes through the plan the C++ layer keeps (reduce_fast): other
    # arrays of that layout, rows of one array at other addresses, each against NumPy.
    rng = np.random.default_rng(7)
    host = host_values(np.dtype(np.float32), (4, 1000), rng, kind)
    rows = gpuarray.to_gpu(host)
    for _ in range(2):
        for k in range(4):
            for name, g, h in (
                ("row", rows[k], host[k]),
                ("copy", gpuarray.to_gpu(host[k]), host[k]),
            ):
                want = reference(kind, h, None, False, None, 0)
                assert_matches(run(kind, g).get(), want, f"{kind} {name} {k}")


def test_out_dtype_and_ddof():
    rng = np.random.default_rng(4)
    h = host_values(np.dtype(np.int16), (40, 50), rng, "sum")
    g = gpuarray.to_gpu(h)
    assert_matches(gpuarray.sum(g, axis=1, dtype=np.int8).get(), h.sum(axis=1, dtype=np.int8), "")
    big = gpuarray.zeros((50, 3), np.float64)
    out = big[::-1, 1]
    assert gpuarray.mean(g, axis=0, out=out) is out
    np.testing.assert_allclose(out.get(), h.mean(axis=0))
    np.testing.assert_array_equal(big.get()[:, 0], 0)  # nothing written beside out
    f = host_values(np.dtype(np.float32), (40, 50), rng, "var")
    gf = gpuarray.to_gpu(f)
    for ddof in (0, 1, 39, 40, 41):
        want = np.var(f.astype(np.float64), axis=0, ddof=ddof).astype(np.float32)
        with np.errstate(all="ignore"):
            assert_matches(gf.var(axis=0, ddof=ddof).get(), want, f"ddof={ddof}")
        assert_matches(gf.std(axis=0, ddof=ddof).get(), np.sqrt(want), f"std ddof={ddof}")


def test_nan_rules_are_numpys():
    h = np.arange(40, dtype=np.float32).reshape(4, 10)
    h[1, 3] = h[1, 7] = np.nan
    h[2, :] = np.nan
    g = gpuarray.to_gpu(h)
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for kind in ("min", "max", "argmin", "argmax", "nanmin", "nanmax", "nansum",
                         "nanmean", "nanvar", "sum", "mean"):  # fmt: skip
                want = getattr(np, kind)(h, axis=1)
                got = getattr(gpuarray, kind)(g, axis=1).get()
                np.testing.assert_array_equal(got, want, err_msg=kind)
    assert gpuarray.argmax(g).get() == np.argmax(h) == 13  # the first NaN


def test_empty_reductions_give_numpys_identities():
    g = gpuarray.zeros((3, 0), np.float32)
    np.testing.assert_array_equal(g.sum(axis=1).get(), [0, 0, 0])
    np.testing.assert_array_equal(g.prod(axis=1).get(), [1, 1, 1])
    np.testing.assert_array_equal(g.any(axis=1).get(), [False] * 3)
    np.testing.assert_array_equal(g.all(axis=1).get(), [True] * 3)
    assert np.isnan(g.mean(axis=1).get()).all() and np.isnan(g.var(axis=1).get()).all()
    assert gpuarray.sum(gpuarray.zeros((0,), np.int8)).get() == 0


SQUARE = 16384


@pytest.fixture(scope="module")
def square():
    import cuplug.driver as drv

    free, _ = drv.mem_get_info()
    if free < 3 << 30:
        pytest.skip(f"needs 3 GiB of device memory, {free / 2**30:.1f} free")
    h = np.random.default_rng(0).standard_normal((SQUARE, SQUARE), dtype=np.float32)
    return h, gpuarray.to_gpu(h)


def _bandwidth(f, nbytes, repeat=10):
    import cuplug.driver as drv

    f()
    drv.Context.synchronize()
    t = time.perf_counter()
    for _ in range(repeat):
        f()
    drv.Context.synchronize()
    return nbytes * repeat / (time.perf_counter() - t) / 1e9


@pytest.mark.sweep  # 1 GiB: the kernels of the smaller tests, too big for compute-sanitizer
def test_16k_square_sums_match_numpy_and_report_bandwidth(square, record_property):
    h, g = square
    for axis in (0, 1, None):
        got = g.sum(axis=axis).get()
        want = h.sum(axis=axis, dtype=np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-2)
        gbs = _bandwidth(lambda axis=axis: g.sum(axis=axis), h.nbytes)
        record_property(f"sum_axis_{axis}_GBps", round(gbs))
        print(f"16k x 16k float32 sum(axis={axis}): {gbs:.0f} GB/s")


def test_results_are_the_same_bits_on_every_run():
    g = gpuarray.to_gpu(np.random.default_rng(0).standard_normal((2048, 2048), dtype=np.float32))
    small = gpuarray.to_gpu(np.random.default_rng(1).standard_normal((3000, 517)))
    cases = [
        (g, "sum", 0), (g, "sum", 1), (g, "sum", None), (g, "var", 0),
        (small, "mean", 0), (small.T, "std", None), (small, "nansum", 1),
    ]  # fmt: skip
    for x, kind, axis in cases:
        first = getattr(gpuarray, kind)(x, axis=axis).get()
        for _ in range(3):
            again = getattr(gpuarray, kind)(x, axis=axis).get()
            assert first.tobytes() == again.tobytes(), (kind, axis)


@pytest.mark.sweep  # 10**8 values: too big for compute-sanitizer
def test_float32_sums_are_at_least_as_accurate_as_numpys():
    rng = np.random.default_rng(5)
    n = 10**8
    mags = 10.0 ** rng.integers(-6, 7, n)
    h = (rng.standard_normal(n) * mags).astype(np.float32)
    exact = float(np.sum(h.astype(np.float64)))  # float64 holds these sums to ~1e-16
    ours = float(gpuarray.to_gpu(h).sum().get())
    theirs = float(np.sum(h))
    assert abs(ours - exact) <= abs(theirs - exact) + abs(exact) * 2**-24
    rows = h.reshape(10000, -1)
    exact_rows = rows.astype(np.float64).sum(axis=0)
    ours_rows = gpuarray.to_gpu(rows).sum(axis=0).get().astype(np.float64)
    theirs_rows = rows.sum(axis=0).astype(np.float64)
    assert np.abs(ours_rows - exact_rows).max() <= np.abs(theirs_rows - exact_rows).max() + 1e-3


def test_reductions_are_ordered_on_their_stream():
    import cuplug.driver as drv

    s = drv.Stream()
    x = gpuarray.empty((1 << 22,), np.float32)
    x.fill(1, stream=s)
    r = gpuarray.sum(x, stream=s)
    q = x.reshape(1024, -1).max(axis=1, stream=s)
    s.synchronize()
    assert r.get() == 1 << 22 and (q.get() == 1).all()


def test_pycuda_positional_forms_compute_the_same():
    import cuplug.driver as drv

    h = np.arange(1000, dtype=np.int16)
    g = gpuarray.to_gpu(h)
    s = drv.Stream()
    assert gpuarray.sum(g, np.float64, s).get() == h.sum()
    assert gpuarray.any(g, s).get() and not gpuarray.all(g, s).get()
    assert gpuarray.min(g, s).get() == 0 and gpuarray.max(g, s).get() == 999
    assert g.any(s).get()


@pytest.mark.slow
@pytest.mark.sweep
def test_more_than_2_to_the_32_elements():
    import cuplug.driver as drv

    n = 2**32 + 5
    free, _ = drv.mem_get_info()
    if free < n + (1 << 30):
        pytest.skip(f"needs {n / 2**30:.1f} GiB of device memory, {free / 2**30:.1f} free")
    x = gpuarray.empty((n,), np.int8)
    x.fill(1)
    x[-3:] = np.array([5, -7, 9], np.int8)
    assert gpuarray.sum(x).get() == n - 3 + 5 - 7 + 9
    assert x.max().get() == 9 and x.argmin().get() == n - 2 and x.argmax().get() == n - 1
    pairs = x[: n - 1].reshape(2, (n - 1) // 2)  # 2**31 + 2 columns
    col = pairs.max(axis=0)
    assert col[:2].get().tolist() == [1, 1] and col[-2:].get().tolist() == [5, 1]
    row = pairs.sum(axis=1)
    assert row.get().tolist() == [(n - 1) // 2, (n - 1) // 2 - 2 + 5 - 7]
