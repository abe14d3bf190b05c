"""Scans on the GPU against NumPy and Python references: cumsum/cumprod for every dtype at sizes
around the block, tile, one-block and group boundaries, along every axis of 2-d and 3-d arrays,
strided and reversed inputs, out= and dtype=; PyCUDA's scan kernels in place and into "new"
arrays; PyOpenCL's GenericScanKernel (segmented, prev_item, last_item, in-place shifts);
bit-for-bit determinism; and a scan of more than 2**32 elements."""

from __future__ import annotations

import numpy as np
import pytest
from support.dtype_matrix import ARRAY_DTYPES

import cuplug.gpuarray as gpuarray
from cuplug import scan
from cuplug._array import cumulative
from cuplug._codegen import scan as sg

pytestmark = [pytest.mark.gpu, pytest.mark.real_gpu]

NUMERIC = [np.dtype(d) for d in ARRAY_DTYPES]
#: One dtype per tuning (accumulators of 4, 8 and 16 bytes) and per conversion (float16 and int8
#: accumulate wider): these run in the compute-sanitizer pass too (tools/gpu_check.sh leaves the
#: `sweep` tests out); the other dtypes repeat the same kernels at the same boundaries.
CORE = [np.dtype(d) for d in (np.float32, np.float64, np.complex128, np.float16, np.int8)]
BY_DTYPE = [
    pytest.param(d, marks=() if d in CORE else pytest.mark.sweep, id=str(d)) for d in NUMERIC
]


@pytest.fixture(scope="module", autouse=True)
def _ctx(gpu_ctx):
    yield


def host(dtype, n, seed=0, kind="sum"):
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return rng.random(n) < (0.5 if kind == "sum" else 0.999)
    if dtype.kind in "iu":
        if kind == "prod":  # mostly ones, some twos and minus ones: no overflow for long
            v = np.where(rng.random(n) < 0.995, 1, 2)
            if dtype.kind == "i":
                v = np.where(rng.random(n) < 0.01, -1, v)
            return v.astype(dtype)
        return rng.integers(0, 7, n).astype(dtype)
    if kind == "prod":
        real = 1 + (rng.random(n) - 0.5) * 1e-3
    else:
        real = rng.random(n) - 0.25
    if dtype.kind == "c":
        imag = (rng.random(n) - 0.5) * (1e-3 if kind == "prod" else 1)
        return (real + 1j * imag).astype(dtype)
    return real.astype(dtype)


def reference(op, h, axis=None, dtype=None):
    """numpy's cum<op> computed exactly enough: floats in float64 / complex128, then cast."""
    result = cumulative.cumulative_dtype(op, h.dtype, dtype)
    func = np.cumsum if op == "sum" else np.cumprod
    if result.kind in "fc":
        wide = np.complex128 if result.kind == "c" else np.float64
        return func(h.astype(wide), axis=axis), result
    return func(h, axis=axis, dtype=result), result


def check(got, op, h, axis=None, dtype=None, what=""):
    want, result = reference(op, h, axis, dtype)
    assert got.dtype == result, f"{what}: dtype {got.dtype}, NumPy gives {result}"
    host_got = got.get()
    assert host_got.shape == want.shape, f"{what}: shape {host_got.shape} != {want.shape}"
    if result.kind in "biu":
        np.testing.assert_array_equal(host_got, want, err_msg=what)
        return
    # A scan's error grows with the partial sums of |x| (sum) or the value (prod); float16
    # results are rounded once from float32 partial sums.
    eps = np.finfo(result).eps
    if op == "sum":
        scale = np.cumsum(np.abs(h.astype(np.complex128 if result.kind == "c" else np.float64)),
                          axis=axis)  # fmt: skip
        bound = np.abs(want) * eps + scale * min(eps, 2e-7) * 256
    else:
        # Every multiplication's rounding reaches the product whatever the association: element
        # k's relative error is at most about k eps (the classic bound for a product of k
        # terms). A parallel scan gets close to it on these values near 1: multiplying two
        # numbers both near 1 rounds with a bias (tree products of 32 of them are off by -0.65
        # eps on average), so the error grows linearly, not like NumPy's sequential sqrt(k)
        # (measured on the GPU: 1900 eps at k = 10^5 against NumPy's 100). A missing or doubled
        # element is caught exactly by the integer cases.
        k = np.arange(1, (want.size if axis is None else want.shape[axis]) + 1, dtype=np.float64)
        if axis is not None:
            k = k.reshape([-1 if d == axis % want.ndim else 1 for d in range(want.ndim)])
        bound = np.abs(want) * eps * (64 + k)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(want.astype(result))
        err = np.abs(host_got.astype(want.dtype) - want)
    tiny = np.finfo(result).tiny  # values below it round to subnormals or zero
    assert np.all(err[finite] <= bound.reshape(err.shape)[finite] + tiny), what
    decided = np.ones(finite.shape, bool)
    if result.kind == "f":
        # A partial sum within the error bound of the overflow threshold (max + half an ulp:
        # 65520 for float16) may round either way: float32 partial sums rounded once, against
        # float64 ones (seen on the GPU: 1 of 10^6 float16 sums).
        info = np.finfo(result)
        threshold = float(info.max) + 2.0 ** (info.maxexp - 2 - info.nmant)
        with np.errstate(invalid="ignore"):
            decided = ~(np.abs(np.abs(want) - threshold) <= bound.reshape(want.shape))
    np.testing.assert_array_equal(np.isfinite(host_got)[decided], finite[decided], err_msg=what)


def _tile(op, dtype):
    result = cumulative.cumulative_dtype(op, dtype)
    s = cumulative.array_scan_for(op, dtype, result, result, False)
    return s.gen.tuning


def _sizes(t):
    tile, single = t.tile, t.tile * t.single_tiles
    group = tile * sg.GROUP
    return sorted(
        {0, 1, t.block - 1, t.block, tile - 1, tile, tile + 1, single, single + 1}
        | {group - 1, group, group + 1, 2 * group + tile + 3, 10**6 + 3}
    )


@pytest.mark.parametrize("dtype", BY_DTYPE)
def test_cumsum_matches_numpy_around_every_boundary(dtype):
    for n in _sizes(_tile("sum", dtype)):
        h = host(dtype, n, seed=n)
        check(gpuarray.cumsum(gpuarray.to_gpu(h)), "sum", h, what=f"cumsum {dtype} n={n}")


@pytest.mark.parametrize("dtype", BY_DTYPE)
def test_cumprod_matches_numpy(dtype):
    t = _tile("prod", dtype)
    for n in (1, t.tile + 1, t.tile * sg.GROUP + 5, 300_001):
        h = host(dtype, n, seed=n, kind="prod")
        check(gpuarray.cumprod(gpuarray.to_gpu(h)), "prod", h, what=f"cumprod {dtype} n={n}")


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.complex64], ids=str)
def test_cumsum_of_2_pow_24_plus_1_elements(dtype):
    dtype = np.dtype(dtype)
    h = host(dtype, 2**24 + 1, seed=24)
    check(gpuarray.cumsum(gpuarray.to_gpu(h)), "sum", h, what=f"cumsum {dtype} 2**24+1")


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_, np.complex128], ids=str)
@pytest.mark.parametrize(
    "shape", [(7, 3000), (3000, 7), (1, 5000), (5000, 1), (4, 5, 6), (33, 2, 1500)], ids=str
)
def test_cumsum_and_cumprod_along_every_axis(dtype, shape):
    dtype = np.dtype(dtype)
    h = host(dtype, int(np.prod(shape)), seed=1).reshape(shape)
    hp = host(dtype, int(np.prod(shape)), seed=2, kind="prod").reshape(shape)
    g, gp = gpuarray.to_gpu(h), gpuarray.to_gpu(hp)
    for axis in [None] + list(range(-len(shape), len(shape))):
        r = gpuarray.cumsum(g, axis=axis)
        assert r.flags.c_contiguous
        check(r, "sum", h, axis, what=f"cumsum {shape} axis={axis}")
        check(gpuarray.cumprod(gp, axis=axis), "prod", hp, axis, what=f"cumprod axis={axis}")


def test_strided_reversed_and_fortran_inputs():
    h = host(np.dtype(np.float64), 40_000, seed=3)
    g = gpuarray.to_gpu(h)
    for view in (slice(None, None, 3), slice(None, None, -1), slice(5, -7, -2)):
        check(gpuarray.cumsum(g[view]), "sum", h[view], what=f"cumsum [{view}]")
    h2 = h.reshape(200, 200)
    g2 = gpuarray.to_gpu(h2)
    for sub in ((slice(None, None, -2), slice(None, None, 3)), (slice(3, 150), slice(None, -5))):
        for axis in (None, 0, 1):
            check(gpuarray.cumsum(g2[sub], axis=axis), "sum", h2[sub], axis, what=f"{sub} {axis}")
    f = np.asfortranarray(h2)
    for axis in (None, 0, 1):
        check(gpuarray.cumsum(gpuarray.to_gpu(f), axis=axis), "sum", f, axis, what=f"F {axis}")
        check(gpuarray.cumsum(g2.T, axis=axis), "sum", h2.T, axis, what=f"T {axis}")


def test_out_and_dtype_arguments():
    h = host(np.dtype(np.int8), 30_000, seed=4)
    g = gpuarray.to_gpu(h)
    out = gpuarray.zeros((30_000,), np.float32)
    assert gpuarray.cumsum(g, out=out) is out
    np.testing.assert_array_equal(out.get(), np.cumsum(h).astype(np.float32))
    wrapped = gpuarray.cumsum(g, dtype=np.int8)  # NumPy's wrap-around in the asked dtype
    np.testing.assert_array_equal(wrapped.get(), np.cumsum(h, dtype=np.int8))
    # Accumulated in the result dtype (int8 here, wrapping), then cast into out: NumPy's order.
    gpuarray.cumsum(g, dtype=np.int8, out=out)
    np.testing.assert_array_equal(out.get(), np.cumsum(h, dtype=np.int8).astype(np.float32))
    big = gpuarray.zeros((60_000,), np.int64)
    gpuarray.cumsum(g, out=big[::2])
    np.testing.assert_array_equal(big.get()[::2], np.cumsum(h))
    assert not big.get()[1::2].any()
    h3 = host(np.dtype(np.float32), 3 * 40 * 50, seed=5).reshape(3, 40, 50)
    out3 = gpuarray.zeros((3, 40, 50), np.float64)
    gpuarray.cumsum(gpuarray.to_gpu(h3), axis=1, out=out3)
    np.testing.assert_allclose(out3.get(), np.cumsum(h3.astype(np.float64), axis=1), rtol=1e-5)
    outT = gpuarray.zeros((50, 40, 3), np.float32).transpose(2, 1, 0)
    gpuarray.cumprod(gpuarray.to_gpu(h3), axis=2, out=outT)
    np.testing.assert_allclose(outT.get(), np.cumprod(h3, axis=2), rtol=1e-4)


def test_pycuda_scan_test_sizes_inclusive_and_exclusive():
    """PyCUDA's own test_scan: in place, int32, a+b."""
    for cls in (scan.ExclusiveScanKernel, scan.InclusiveScanKernel):
        knl = cls(np.int32, "a+b", "0")
        for n in [10, 2**10 - 5, 2**10, 2**20 - 2**18, 2**20 - 2**18 + 5, 2**10 + 5, 2**20 + 5,
                  2**20, 2**24]:  # fmt: skip
            h = np.random.default_rng(n).integers(0, 10, n).astype(np.int32)
            g = gpuarray.to_gpu(h)
            assert knl(g) is g
            want = np.cumsum(h)
            if cls is scan.ExclusiveScanKernel:
                want -= h
            np.testing.assert_array_equal(g.get(), want, err_msg=f"{cls.__name__} n={n}")


def test_scan_kernels_into_new_arrays_other_arrays_and_overlapping_views():
    knl = scan.InclusiveScanKernel(np.float64, "a+b")
    h = host(np.dtype(np.float64), 100_000, seed=6)
    g = gpuarray.to_gpu(h)
    new = knl(g, "new")
    assert new is not g and new.shape == g.shape
    np.testing.assert_array_equal(g.get(), h)  # input untouched
    np.testing.assert_allclose(new.get(), np.cumsum(h), rtol=1e-12, atol=1e-9)
    other = gpuarray.zeros_like(g)
    assert knl(g, other) is other
    np.testing.assert_array_equal(other.get(), new.get())
    # out = in shifted by one element: the input is copied first.
    knl(g[:-1], g[1:])
    np.testing.assert_allclose(g.get()[1:], np.cumsum(h[:-1]), rtol=1e-12, atol=1e-9)
    rev = gpuarray.to_gpu(h)
    knl(rev[::-1])  # in place through a reversed view
    np.testing.assert_allclose(rev.get()[::-1], np.cumsum(h[::-1]), rtol=1e-12, atol=1e-9)
    excl = scan.ExclusiveScanKernel(np.float16, "a+b", "0")
    h16 = (np.arange(5000) % 3).astype(np.float16)
    r = excl(gpuarray.to_gpu(h16), "new")
    want = np.concatenate([[0], np.cumsum(h16.astype(np.float64))[:-1]]).astype(np.float16)
    np.testing.assert_array_equal(r.get(), want)


def test_inclusive_scan_without_neutral_and_custom_operator():
    knl = scan.InclusiveScanKernel(np.int32, "a > b ? a : b")  # running max: no neutral
    h = -np.random.default_rng(7).integers(1, 2**30, 500_000).astype(np.int32)
    g = gpuarray.to_gpu(h)
    knl(g)
    np.testing.assert_array_equal(g.get(), np.maximum.accumulate(h))


def _segmented_reference(x, starts):
    out = np.empty(len(x), np.int64)
    prev = np.empty(len(x), np.int64)
    acc = 0
    for i, (v, s) in enumerate(zip(x.tolist(), starts.tolist())):
        prev[i] = 0 if (s or i == 0) else acc
        acc = v if s else acc + v
        out[i] = acc
    return out, prev


@pytest.mark.parametrize("n", [1, 1000, 100_003, 2_000_000])
def test_segmented_generic_scan_against_python(n):
    rng = np.random.default_rng(n)
    x = rng.integers(-5, 9, n).astype(np.int32)
    starts = (rng.random(n) < 0.001).astype(np.uint8)
    starts[rng.integers(0, n, 3)] = 1
    knl = scan.GenericScanKernel(
        np.int64,
        arguments="const int *x, const unsigned char *starts, long *out, long *prev, long *last",
        input_expr="(long)x[i]",
        scan_expr="across_seg_boundary ? b : a + b",
        neutral="0",
        is_segment_start_expr="starts[i] != 0",
        output_statement="out[i] = item; prev[i] = prev_item; if (i == N - 1) last[0] = last_item;",
    )
    gx, gs = gpuarray.to_gpu(x), gpuarray.to_gpu(starts)
    out, prev = gpuarray.zeros((n,), np.int64), gpuarray.zeros((n,), np.int64)
    last = gpuarray.zeros((1,), np.int64)
    knl(gx, gs, out, prev, last)
    want, want_prev = _segmented_reference(x, starts)
    np.testing.assert_array_equal(out.get(), want)
    np.testing.assert_array_equal(prev.get(), want_prev)
    assert last.get()[0] == want[-1]


def test_generic_scan_examples_from_pyopencl():
    # ary[i+1] = item in place: every input is read before any output is written.
    knl = scan.GenericScanKernel(
        np.int32,
        arguments="__global int *ary",
        input_expr="ary[i]",
        scan_expr="a+b",
        neutral="0",
        output_statement="ary[i+1] = item;",
    )
    h = np.arange(10_000, dtype=np.int32) % 7
    a = gpuarray.to_gpu(h)
    knl(a, size=a.size - 1)
    np.testing.assert_array_equal(a.get()[1:], np.cumsum(h[:-1]))
    # Stream compaction (copy_if) with prev_item and last_item.
    copy_if = scan.GenericScanKernel(
        np.int32,
        arguments="const float *x, float *out, int *count",
        input_expr="x[i] > 0.5f ? 1 : 0",
        scan_expr="a+b",
        neutral="0",
        output_statement="if (prev_item != item) out[item - 1] = x[i]; "
        "if (i + 1 == N) count[0] = last_item;",
    )
    hx = np.random.default_rng(8).random(1_000_003).astype(np.float32)
    out, count = gpuarray.zeros((hx.size,), np.float32), gpuarray.zeros((1,), np.int32)
    copy_if(gpuarray.to_gpu(hx), out, count)
    kept = hx[hx > 0.5]
    assert count.get()[0] == kept.size
    np.testing.assert_array_equal(out.get()[: kept.size], kept)


def test_float32_scans_are_deterministic_and_accurate():
    rng = np.random.default_rng(11)
    n = 2**24 + 1
    h = (rng.standard_normal(n) * 10.0 ** rng.integers(-4, 5, n)).astype(np.float32)
    g = gpuarray.to_gpu(h)
    first = gpuarray.cumsum(g).get()
    for _ in range(3):
        assert gpuarray.cumsum(g).get().tobytes() == first.tobytes()
    rows = g[: 4096 * 4096].reshape(4096, 4096)
    r0 = gpuarray.cumsum(rows, axis=1).get()
    assert gpuarray.cumsum(rows, axis=1).get().tobytes() == r0.tobytes()
    knl = scan.InclusiveScanKernel(np.float32, "a+b")
    k0 = knl(g, "new").get()
    assert knl(g, "new").get().tobytes() == k0.tobytes()
    exact = np.cumsum(h.astype(np.float64))
    ours = np.max(np.abs(first - exact))
    numpys = np.max(np.abs(np.cumsum(h) - exact))
    assert ours <= numpys, (ours, numpys)


def test_scan_on_a_stream():
    import cuplug.driver as drv

    s = drv.Stream()
    h = host(np.dtype(np.float32), 3_000_000, seed=12)
    g = gpuarray.to_gpu(h)
    r = gpuarray.cumsum(g, stream=s)
    knl = scan.InclusiveScanKernel(np.float32, "a+b")
    k = knl(g, "new", stream=s)
    s.synchronize()
    check(r, "sum", h, what="stream")
    np.testing.assert_array_equal(k.get(), r.get())


@pytest.mark.sweep
def test_scan_of_more_than_2_pow_32_elements():
    """64-bit element indices: 2**32 + 4099 one-byte elements (4 GiB; 16 GiB of uint32 out)."""
    n = 2**32 + 4099
    g = gpuarray.empty((n,), np.uint8)
    g.fill(1)
    knl = scan.InclusiveScanKernel(np.uint8, "a+b")
    knl(g)  # wraps around: (i + 1) mod 256
    for start in (0, 2**31 - 3000, 2**32 - 3000, n - 5000):
        got = g[start : start + 5000].get()
        want = ((np.arange(start, start + len(got)) + 1) % 256).astype(np.uint8)
        np.testing.assert_array_equal(got, want, err_msg=f"at {start}")
    g.fill(1)
    r = gpuarray.cumsum(g, dtype=np.uint32)  # 16 GiB out; wraps around at 2**32
    for start in (0, 2**31 - 3000, 2**32 - 3000, n - 5000):
        got = r[start : start + 5000].get()
        want = np.arange(start + 1, start + 1 + len(got), dtype=np.uint64) % 2**32
        np.testing.assert_array_equal(got, want.astype(np.uint32), err_msg=f"at {start}")
