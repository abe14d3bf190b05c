"""NumPy's reductions over axes, their generated kernels run on the host (support/
reduction_emulator.py, no GPU): every reduction over every layout class, edge shapes, splits and
several passes, out= dtypes, ddof and strided out= against NumPy. Resolution, compilation, plans
and the fake-driver API: test_axis_reductions.py. Results on a GPU: test_axis_reductions_gpu.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from support.reduction_reference import (
    assert_matches,
    host_values,
    layouts,
    numpy_result,
    reference,
)

from cuplug._codegen import axis_reduction as ar
from cuplug._kernels import axis_reduction_plan as axp

KINDS = ar.KINDS


# ---- kernels run on the host (reduction_emulator.py) ---------------------------------------------

EMU_DTYPES = [np.dtype(d) for d in ("bool", "int16", "uint8", "float16", "float32", "complex64")]


def emu_specs():
    out = {}
    for kind in KINDS:
        for dt in EMU_DTYPES:
            try:
                c, r = axp.resolve_dtypes(kind, dt)
            except TypeError:
                continue
            out[(kind, dt, None)] = ar.spec(kind, dt, c, r)
    c, r = axp.resolve_dtypes("sum", np.dtype(np.int16), np.int8)
    out[("sum", np.dtype(np.int16), np.dtype(np.int8))] = ar.spec("sum", np.int16, c, r)
    return out


@pytest.fixture(scope="module")
def emulator():
    from support import reduction_emulator

    if reduction_emulator.compiler() is None:
        pytest.skip("no host C++ compiler or CUDA headers to run kernels on the host")
    specs = emu_specs()
    return reduction_emulator.Emulator(list(specs.values())), specs


def emulate(emulator, kind, x, axis, keepdims=False, dtype=None, out=None, ddof=0, sms=2):
    emu, specs = emulator
    sp = specs[(kind, x.dtype, None if dtype is None else np.dtype(dtype))]
    if kind in ("argmin", "argmax") and axis is None and not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)  # as gpuarray does: the flat index is C order's
    axes = axp.normalize_axis(axis, x.ndim, kind)
    shape = axp.result_shape(x.shape, axes, keepdims)
    res = sp.out_dtype
    if out is None:
        out = np.full(shape, 99, res)
    kept_strides = [st for k, st in enumerate(out.strides) if not keepdims or k not in axes]
    isz, osz = x.dtype.itemsize, out.dtype.itemsize
    denom = ddof if kind in ("var", "std", "nanvar", "nanstd") else int(
        np.prod([x.shape[k] for k in axes])
    )  # fmt: skip
    launches, temps, _, _ = axp.plan_launches(
        x.shape, [st // isz for st in x.strides], axes, isz, sp.acc_size,
        [st // osz for st in kept_strides], sms, x.ctypes.data % 16,
        ordered=kind in ("argmin", "argmax"), denom=denom,
    )  # fmt: skip
    return emu.run(sp, launches, temps, x, out)


@pytest.mark.parametrize("kind", KINDS)
def test_every_reduction_over_every_layout_matches_numpy_on_the_host(emulator, kind):
    rng = np.random.default_rng(7)
    for dt in EMU_DTYPES:
        if (kind, dt, None) not in emulator[1]:
            continue
        base = host_values(dt, (6, 35, 9), rng, kind)
        axes = [None, 1] if kind in ("argmin", "argmax") else [None, 0, 2, (0, 2), (1, 2)]
        for (name, x), axis in itertools.product(layouts(base), axes):
            got = emulate(emulator, kind, x, axis)
            want = reference(kind, x, axis, False, None, 0)
            assert_matches(got, want, f"{kind} {dt} {name} axis={axis}")


@pytest.mark.parametrize("kind", ["sum", "argmax", "max", "mean", "var"])
@pytest.mark.parametrize(
    "shape,axis",
    [
        ((), None),
        ((5,), 0),
        ((0, 4), 1),
        ((4, 0), 0),
        ((4, 0), 1),
        ((1, 1, 7), 2),
        ((3, 4), ()),
        ((33, 1, 20), (0, 1)),
    ],  # fmt: skip
    ids=str,
)
def test_edge_shapes_match_numpy_on_the_host(emulator, kind, shape, axis):
    rng = np.random.default_rng(1)
    x = host_values(np.dtype(np.float32), shape, rng, kind)
    want = numpy_result(kind, x, axis)
    if isinstance(want, Exception):
        return  # raised before any launch (the fake-driver tests check the message)
    for keepdims in (False, True):
        if kind in ("argmax",) and axis == ():
            continue
        got = emulate(emulator, kind, x, axis, keepdims)
        assert_matches(got, reference(kind, x, axis, keepdims, None, 0), f"{shape} {axis}")


@pytest.mark.parametrize(
    "shape,axis,sms",
    [
        ((100_000,), None, 4),
        ((20, 3000), 0, 8),
        ((3, 20000), 1, 8),
        ((1000, 40), 1, 2),
        ((64, 7, 64), (0, 2), 3),
        ((5000, 3), 0, 6),
    ],  # fmt: skip
    ids=str,
)
def test_splits_and_several_passes_match_numpy_on_the_host(emulator, shape, axis, sms):
    rng = np.random.default_rng(3)
    for kind in ("sum", "argmax", "var", "nanmean", "all"):
        for dt in (np.dtype(np.float32), np.dtype(np.int16)):
            if (kind, dt, None) not in emulator[1] or (
                kind == "argmax" and isinstance(axis, tuple)
            ):
                continue
            x = host_values(dt, shape, rng, kind)
            got = emulate(emulator, kind, x, axis, sms=sms)
            assert_matches(got, reference(kind, x, axis, False, None, 0), f"{kind} {dt}")


def test_out_dtype_ddof_and_strided_out_on_the_host(emulator):
    rng = np.random.default_rng(5)
    x = host_values(np.dtype(np.int16), (40, 50), rng, "sum")
    got = emulate(emulator, "sum", x, 1, dtype=np.int8)
    assert_matches(got, numpy_result("sum", x, 1, dtype=np.int8), "sum dtype=int8")
    out = np.zeros((50, 2), np.int64)[::-1, 1]  # reversed and strided
    emulate(emulator, "sum", x, 0, out=out)
    np.testing.assert_array_equal(out, x.sum(axis=0))
    f = host_values(np.dtype(np.float32), (40, 50), rng, "var")
    for ddof in (0, 1, 40, 41):
        got = emulate(emulator, "var", f, 0, ddof=ddof)
        assert_matches(got, reference("var", f, 0, False, None, ddof), f"ddof={ddof}")
