"""GPU: cuplug.gpuarray's functions and methods against NumPy: creation, transfers of any
layout, indexing and assignment, astype, fill, mul_add, real/imag/conj, reverse, round, clip,
where/if_positive, take and the multi_* gathers, concatenate/stack, streams, the engine's
index semantics, and arrays of more than 2**32 elements (slow)."""

from __future__ import annotations

import itertools
import pickle
import warnings

import numpy as np
import pytest
from support.array_gpu import DTYPES, check, values

import cuplug.driver as drv
import cuplug.gpuarray as gpuarray
from cuplug._kernels.engine import Arg, Kernel

pytestmark = [pytest.mark.gpu, pytest.mark.real_gpu]


@pytest.fixture(scope="module", autouse=True)
def _context(gpu_ctx):
    yield gpu_ctx


def test_seed_example_through_the_pycuda_alias():
    import importlib

    import cuplug.compat.pycuda  # noqa: F401  (installs the pycuda alias first)

    pycuda_gpuarray = importlib.import_module("pycuda.gpuarray")
    g = pycuda_gpuarray.to_gpu(np.array([1, 2, 3, 4, 5], dtype=np.float32))
    np.testing.assert_array_equal((g * 2.0).get(), [2.0, 4.0, 6.0, 8.0, 10.0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_creation_values(dtype):
    check(gpuarray.zeros((3, 5), dtype), np.zeros((3, 5), dtype))
    check(gpuarray.ones((3, 5), dtype, order="F"), np.ones((3, 5), dtype))
    e = gpuarray.empty((4, 2), dtype)
    check(gpuarray.zeros_like(e.T), np.zeros((2, 4), dtype))
    check(gpuarray.ones_like(e, dtype=np.float32), np.ones((4, 2), np.float32))
    if np.dtype(dtype).kind != "b":
        for args in ((7,), (2, 11), (10, 1, -3), (0.5, 4.0, 0.75)):
            with np.errstate(all="ignore"):
                want = np.arange(*args, dtype=dtype)
            check(gpuarray.arange(*args, dtype=dtype), want, what=f"arange{args} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_transfers_of_every_layout(dtype):
    rng = np.random.default_rng(1)
    host = values(dtype, (6, 8, 10), rng)
    g = gpuarray.to_gpu(host)
    for index in [
        (slice(None, None, 2),),
        (slice(None), slice(None, None, -1)),
        (Ellipsis, slice(1, None, 3)),
        (1,),
        (slice(None), 2, slice(3, 4)),
    ]:
        np.testing.assert_array_equal(g[index].get(), host[index])
        np.testing.assert_array_equal(
            g.transpose(2, 0, 1)[index].get(), host.transpose(2, 0, 1)[index]
        )
        check(g[index].copy(), host[index])
    # set() into views, from hosts of any layout
    target = gpuarray.zeros((6, 8, 10), dtype)
    h = host.copy()
    src = values(dtype, (3, 8, 10), rng)
    target[::2].set(src[:, ::-1][:, ::-1])
    h[::2] = src
    np.testing.assert_array_equal(
        target.get(), np.where(np.arange(6)[:, None, None] % 2 == 0, h, 0).astype(dtype)
    )
    t = gpuarray.zeros((10, 8), dtype).T
    t.set(host[0])
    np.testing.assert_array_equal(t.get(), host[0])
    out = np.empty((10, 8), dtype).T
    g[0].get(out)
    np.testing.assert_array_equal(out, host[0])


def test_async_transfers_on_a_stream():
    s = drv.Stream()
    h = drv.pagelocked_empty((1000,), np.float32)
    h[:] = np.arange(1000)
    g = gpuarray.to_gpu_async(h, stream=s)
    r = gpuarray.maximum(g, 500, stream=s)
    back = r.get_async(stream=s)
    s.synchronize()
    np.testing.assert_array_equal(back, np.maximum(np.arange(1000), 500))
    g.set_async(h[::-1].copy(), stream=s)
    s.synchronize()
    np.testing.assert_array_equal(g.get(), np.arange(1000)[::-1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_and_getitem(dtype):
    rng = np.random.default_rng(2)
    h = values(dtype, (7, 9), rng)
    g = gpuarray.to_gpu(h)
    v = values(dtype, (3, 9), rng)
    h[1:4] = v
    g[1:4] = v
    np.testing.assert_array_equal(g.get(), h)
    h[:, ::-2] = h[0, ::-2]
    g[:, ::-2] = g[0, ::-2]
    np.testing.assert_array_equal(g.get(), h)
    h[..., 3] = 1
    g[..., 3] = 1
    np.testing.assert_array_equal(g.get(), h)
    h[2] = np.float64(2.0).astype(dtype)
    g[2] = np.float64(2.0).astype(dtype)
    np.testing.assert_array_equal(g.get(), h)
    h[:, None, 4] = values(dtype, (7, 1), rng)
    g[:, None, 4] = h[:, None, 4]
    np.testing.assert_array_equal(g.get(), h)
    np.testing.assert_array_equal(g[3, 5].get(), h[3, 5])
    np.testing.assert_array_equal(g[-1, ::-3].get(), h[-1, ::-3])


@pytest.mark.sweep
def test_astype_every_pair():
    rng = np.random.default_rng(3)
    for a, b in itertools.product(DTYPES, DTYPES):
        h = values(a, (5, 13), rng)
        if np.dtype(b).kind in "iub" and np.dtype(a).kind in "fc":
            h = (h.real if np.dtype(a).kind == "c" else h).clip(-100, 100).astype(a)
            if np.dtype(b).kind == "u":
                h = abs(h).astype(a)
        g = gpuarray.to_gpu(h)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            want = h[:, ::-2].astype(b)
            got = g[:, ::-2].astype(b)
        check(got, want, what=f"astype {a} -> {b}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_fill(dtype):
    g = gpuarray.empty((3, 4), dtype)
    for v in (0, 1, True, 2.5, np.float32(3), 1 + 2j):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            want = np.empty((3, 4), dtype)
            try:
                want.fill(v)
            except (TypeError, OverflowError) as e:
                with pytest.raises(type(e)):
                    g.fill(v)
                continue
        assert g.fill(v) is g
        check(g, want, what=f"fill {dtype} {v!r}")
    g.T[::2].fill(0)
    want[:, ::2] = 0
    check(g, want)


def test_record_dtypes_fill_and_assign_element_by_element():
    # PyCUDA's from-wiki/distance_element_wise3d.py: zeros of vec.float3, then n[i, j, k] = a
    # make_float3(...) element by element.
    f3 = gpuarray.vec.float3
    g = gpuarray.zeros((4, 5, 3), f3)
    want = np.zeros((4, 5, 3), f3)
    np.testing.assert_array_equal(g.get(), want)
    g[1, 2, 0] = gpuarray.vec.make_float3(1.5, -2, 3)
    g[3, 4, 2] = (7, 8, 9)
    want[1, 2, 0] = (1.5, -2, 3)
    want[3, 4, 2] = (7, 8, 9)
    np.testing.assert_array_equal(g.get(), want)
    g[::-2, 1].fill((1, 1, 1))  # one word for every field; negative strides
    want[::-2, 1] = (1, 1, 1)
    np.testing.assert_array_equal(g.get(), want)
    packed = np.dtype([("a", np.uint8), ("b", np.int16)], align=False)  # 3 bytes: byte words
    h = gpuarray.empty(7, packed).fill((200, -3))
    want_packed = np.empty(7, packed)
    want_packed[:] = (200, -3)
    np.testing.assert_array_equal(h.get(), want_packed)
    with pytest.raises(ValueError, match="one .* element"):
        g.fill(np.zeros(2, f3))


def test_mul_add_real_imag_conj_reverse():
    rng = np.random.default_rng(4)
    for dx, dy in [
        (np.float32, np.float32),
        (np.float64, np.int16),
        (np.complex64, np.float32),
        (np.int32, np.int32),
    ]:
        hx, hy = values(dx, (40,), rng), values(dy, (40,), rng)
        gx, gy = gpuarray.to_gpu(hx), gpuarray.to_gpu(hy)
        check(gx.mul_add(2, gy, 3), 2 * hx + 3 * hy)
        check(gx[::-1].mul_add(0.5, gy, -1.5), 0.5 * hx[::-1] - 1.5 * hy)
    for dt in DTYPES:
        h = values(dt, (6, 5), rng)
        g = gpuarray.to_gpu(h)
        check(g.real if np.dtype(dt).kind == "c" else g.real.copy(), h.real)
        check(g.imag, h.imag if np.dtype(dt).kind == "c" else np.zeros_like(h))
        check(g.T.conj(), h.T.conj())
        check(g.reverse(), h.ravel()[::-1].reshape(h.shape))
    z = gpuarray.to_gpu(np.array([1 + 2j, 3 - 4j], np.complex64))
    assert z.real.get().dtype == np.float32


def test_round_clip_where_if_positive_and_logical():
    rng = np.random.default_rng(5)
    for dt in (np.float16, np.float32, np.float64, np.complex64, np.int32, np.int8):
        h = values(dt, (9, 11), rng) * (np.dtype(dt).type(3) if np.dtype(dt).kind != "b" else 1)
        g = gpuarray.to_gpu(h)
        for d in (0, 1, 2, -1):
            with np.errstate(all="ignore"):
                want = np.round(h, d)
            check(g.round(d), want, what=f"round {dt} {d}")
        if np.dtype(dt).kind != "c":
            with np.errstate(all="ignore"):
                check(gpuarray.clip(g, -2, 5), np.clip(h, -2, 5), what=f"clip {dt}")
                check(g.T.clip(-1, None), np.clip(h.T, -1, None))
                lo = values(dt, (11,), rng)
                check(gpuarray.clip(g, gpuarray.to_gpu(lo), 10), np.clip(h, lo, 10))
    c = values(np.int16, (9, 11), rng)
    a, b = values(np.float32, (9, 11), rng), values(np.float64, (11,), rng)
    gc, ga, gb = gpuarray.to_gpu(c), gpuarray.to_gpu(a), gpuarray.to_gpu(b)
    check(gpuarray.where(gc, ga, gb), np.where(c, a, b))
    check(gpuarray.where(gc > 0, ga, 7), np.where(c > 0, a, 7))
    check(gpuarray.if_positive(gc, ga, gb), np.where(c > 0, a, b))
    check(gpuarray.logical_and(gc, 0.0), np.logical_and(c, 0.0))
    check(gpuarray.logical_not(ga[::-1]), np.logical_not(a[::-1]))
    check(gpuarray.minimum(ga, 0.5), np.minimum(a, np.float32(0.5)))
    out = gpuarray.empty((9, 11), np.float64)
    assert gpuarray.maximum(ga, gb, out=out) is out
    check(out, np.maximum(a, b))


def test_take_and_multi_gathers():
    rng = np.random.default_rng(6)
    a = values(np.float32, (50,), rng)
    b = values(np.int64, (50,), rng)
    idx = rng.integers(-50, 50, (4, 6)).astype(np.int32)
    ga, gb, gi = gpuarray.to_gpu(a), gpuarray.to_gpu(b), gpuarray.to_gpu(idx)
    check(gpuarray.take(ga, gi), np.take(a, idx))
    check(gpuarray.take(ga[::-1], gi), np.take(a[::-1], idx))
    ra, rb = gpuarray.multi_take([ga, gb], gi)
    check(ra, np.take(a, idx))
    check(rb, np.take(b, idx))
    dest = rng.permutation(30)[:20].astype(np.int64)
    src = rng.integers(0, 40, 20).astype(np.int32)
    outs = [gpuarray.zeros(30, np.float32), gpuarray.zeros(30, np.int64)]
    gpuarray.multi_take_put(
        [ga, gb], gpuarray.to_gpu(dest), gpuarray.to_gpu(src), out=outs, src_offsets=[0, 5]
    )
    wa, wb = np.zeros(30, np.float32), np.zeros(30, np.int64)
    wa[dest] = a[src]
    wb[dest] = b[src + 5]
    check(outs[0], wa)
    check(outs[1], wb)
    puts = [gpuarray.zeros(30, np.float32)]
    gpuarray.multi_put([ga[:20]], gpuarray.to_gpu(dest), out=puts)
    wp = np.zeros(30, np.float32)
    wp[dest] = a[:20]
    check(puts[0], wp)


def test_concatenate_and_stack():
    rng = np.random.default_rng(7)
    hs = [values(np.float32, (3, 4), rng), values(np.int16, (2, 4), rng)]
    gs = [gpuarray.to_gpu(h) for h in hs]
    check(gpuarray.concatenate(gs), np.concatenate(hs))
    check(gpuarray.concatenate([g.T for g in gs], axis=1), np.concatenate([h.T for h in hs], 1))
    hs = [values(np.complex64, (3, 4), rng) for _ in range(3)]
    gs = [gpuarray.to_gpu(h) for h in hs]
    for axis in (0, 1, 2, -1):
        check(gpuarray.stack(gs, axis=axis), np.stack(hs, axis=axis))


def test_reshape_ravel_view_squeeze_of_values():
    rng = np.random.default_rng(8)
    h = values(np.float32, (4, 6, 5), rng)
    g = gpuarray.to_gpu(h)
    check(g.reshape(24, 5), h.reshape(24, 5))
    check(g.T.reshape(30, 4), h.T.reshape(30, 4))  # needs a copy
    check(g[:, ::2].ravel(), h[:, ::2].ravel())
    check(g.reshape(4, 30, order="F"), h.reshape(4, 30, order="F"))
    check(g.view(np.int32), h.view(np.int32))
    check(g[:, :1].squeeze(), h[:, :1].squeeze())
    check(gpuarray.transpose(g, (1, 0, 2)) + 0, h.transpose(1, 0, 2))
    check(pickle.loads(pickle.dumps(g[::-1])), h[::-1])


def test_zero_d_and_empty_everywhere():
    z = gpuarray.to_gpu(np.array(3.5, np.float32))
    assert z.shape == () and float(z) == 3.5
    check(z * 2, np.array(7.0, np.float32))
    check(z + gpuarray.zeros((2, 3), np.float32), np.full((2, 3), 3.5, np.float32))
    e = gpuarray.zeros((0, 4), np.int8)
    check(e + 1, np.zeros((0, 4), np.int8))
    check(e.astype(np.float64), np.zeros((0, 4)))
    check(gpuarray.concatenate([e, gpuarray.ones((1, 4), np.int8)]), np.ones((1, 4), np.int8))
    assert e.get().shape == (0, 4)


def test_engine_index_is_c_order_over_the_broadcast_shape():
    k = Kernel([Arg("z", np.int64, True)], "z[i] = i", "iota_test")
    out = gpuarray.empty((4, 6), np.int64, order="F")
    k(out)
    np.testing.assert_array_equal(out.get(), np.arange(24).reshape(4, 6))
    k2 = Kernel(
        [Arg("z", np.float32, True), Arg("x", np.float32, True), Arg("a", np.float32, False)],
        "z[i] = a * x[i]",
        "scale_test",
        loop_prep="",
        after_loop="",
    )
    x = gpuarray.to_gpu(np.arange(12, dtype=np.float32).reshape(3, 4))
    z = gpuarray.empty((2, 3, 4), np.float32)
    k2(z, x, 2.0)
    np.testing.assert_array_equal(
        z.get(), np.broadcast_to(2 * np.arange(12.0).reshape(3, 4), (2, 3, 4))
    )


def test_operations_on_another_stream_are_ordered_there():
    s = drv.Stream()
    x = gpuarray.arange(0, 1 << 20, 1, dtype=np.float32, stream=s)
    y = x.astype(np.float64, stream=s)
    z = gpuarray.maximum(y, 100.0, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(z.get(), np.maximum(np.arange(1 << 20, dtype=np.float64), 100.0))


@pytest.mark.slow
def test_more_than_2_to_the_32_elements():
    free, _ = drv.mem_get_info()
    n = 2**32 + 1027
    if free < 3 * n + (1 << 30):
        pytest.skip(f"needs {3 * n / 2**30:.1f} GiB of device memory, {free / 2**30:.1f} free")
    x = gpuarray.empty((n,), np.int8)
    x.fill(3)
    x[-5:] = np.arange(5, dtype=np.int8)
    y = x + 1
    np.testing.assert_array_equal(y[-7:].get(), [4, 4, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(y[2**32 - 2 : 2**32 + 2].get(), [4, 4, 4, 4])
    del y
    b = x < 2
    assert b.dtype == np.bool_
    np.testing.assert_array_equal(b[-6:].get(), [False, True, True, False, False, False])
    del b
    r = x[:: -(2**31)]  # elements n-1, n-1-2**31, n-1-2**32: 64-bit strided offsets
    assert r.shape == (3,)
    np.testing.assert_array_equal((r * 2).get(), [8, 6, 6])
