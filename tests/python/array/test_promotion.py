"""Result dtypes and broadcasting of array operations against NumPy itself, for every dtype pair
and operation (pure functions: no device)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cuplug import _core, _dtypes
from cuplug._array.math import _resolve, broadcast_shape
from cuplug._codegen import ops

DTYPES = [np.dtype(t) for t in _dtypes._CODES]
BINARY = [n for n, op in ops.OPS.items() if op.nin == 2 and op.build is not None]
UNARY = [n for n, op in ops.OPS.items() if op.nin == 1 and op.build is not None]


def numpy_result(name, *operands):
    """NumPy's result dtype for the ufunc over 1-element arrays / the given scalars, or the
    exception type it raises."""
    ufunc = ops.OPS[name].ufunc
    with np.errstate(all="ignore"):
        try:
            return ufunc(*operands).dtype
        except (TypeError, OverflowError) as e:
            return type(e)


def ours(name, *descriptors, out=None):
    try:
        return _resolve(name, descriptors, out)[1]
    except TypeError:
        return TypeError


def ones(dt):
    return np.ones(1, dt)


@pytest.mark.parametrize("name", BINARY)
def test_binary_result_dtype_is_numpys_for_every_pair(name):
    mismatches = []
    for a, b in itertools.product(DTYPES, DTYPES):
        want = numpy_result(name, ones(a), ones(b))
        got = ours(name, a, b)
        if isinstance(want, type):
            want = TypeError if issubclass(want, TypeError) else want
        if want != got:
            mismatches.append((str(a), str(b), want, got))
    assert not mismatches


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("scalar", [True, 1, 1.0, 1j], ids=["bool", "int", "float", "complex"])
def test_weak_python_scalars_promote_as_in_numpy(name, scalar):
    mismatches = []
    for a in DTYPES:
        for left in (True, False):
            ops = (ones(a), scalar) if left else (scalar, ones(a))
            descr = (a, type(scalar)) if left else (type(scalar), a)
            want = numpy_result(name, *ops)
            if isinstance(want, type):
                want = TypeError if issubclass(want, TypeError) else want
            got = ours(name, *descr)
            if want != got:
                mismatches.append((str(a), left, want, got))
    assert not mismatches


@pytest.mark.parametrize("name", ["add", "multiply", "true_divide", "less", "maximum", "power"])
def test_numpy_scalars_are_strong(name):
    mismatches = []
    for a, b in itertools.product(DTYPES, DTYPES):
        want = numpy_result(name, ones(a), b.type(1))
        if isinstance(want, type):
            want = TypeError
        got = ours(name, a, ("scalar", b))
        if want != got:
            mismatches.append((str(a), str(b), want, got))
    assert not mismatches


@pytest.mark.parametrize("name", UNARY)
def test_unary_result_dtype_is_numpys(name):
    for a in DTYPES:
        want = numpy_result(name, ones(a))
        if isinstance(want, type):
            want = TypeError
        assert ours(name, a) == want, a


@pytest.mark.parametrize("name", ["add", "true_divide", "floor_divide", "left_shift", "less"])
def test_out_dtype_follows_numpys_same_kind_rule(name):
    ufunc = ops.OPS[name].ufunc
    for a, b, o in itertools.product(DTYPES[::2], DTYPES[1::3], DTYPES):
        with np.errstate(all="ignore"):
            try:
                ufunc(ones(a), ones(b), out=np.empty(1, o))
                want = o
            except TypeError:
                want = TypeError
        assert ours(name, a, b, out=o) == want, (a, b, o)


def test_where_and_clip_result_dtypes():
    for a, b in itertools.product(DTYPES, DTYPES):
        assert ours("where", np.dtype(bool), a, b) == np.where(True, ones(a), ones(b)).dtype
    for a in DTYPES:
        for s in (1, 1.0):
            if a.kind == "c":
                continue
            with np.errstate(all="ignore"):
                want = np.clip(ones(a), s, s).dtype
            assert ours("clip", a, type(s), type(s)) == want


def test_unsupported_dtypes_are_named_in_the_error():
    with pytest.raises(TypeError, match="dtype <U3 is not supported|dtype <U3"):
        _resolve("add", (np.dtype("<U3"), np.dtype("f4")), None)
    with pytest.raises(TypeError, match="non-native byte order"):
        _resolve("add", (np.dtype(">f4"), np.dtype("f4")), None)
    with pytest.raises(TypeError, match="boolean subtract"):
        _resolve("subtract", (np.dtype(bool), np.dtype(bool)), None)


def test_result_type_keeps_python_scalars_weak():
    assert _dtypes.result_type(np.zeros(1, np.float32), 2.0) == np.float32
    assert _dtypes.result_type(np.zeros(1, np.int8), 1) == np.int8
    assert _dtypes.result_type(np.zeros(1, np.int8), 1.0) == np.float64
    assert _dtypes.result_type(np.zeros(1, np.float16), 1j) == np.complex64
    assert _dtypes.result_type(np.dtype(np.uint8), np.dtype(np.int8)) == np.int16


def test_double_to_half_rounds_as_numpy():
    rng = np.random.default_rng(1)
    values = np.concatenate(
        [
            rng.standard_normal(4000) * 10.0 ** rng.integers(-9, 6, 4000),
            np.array(
                [
                    0.0,
                    -0.0,
                    np.inf,
                    -np.inf,
                    np.nan,
                    65504.0,
                    65520.0,
                    65519.99,
                    6e-8,
                    3e-8,
                    2.9802322387695312e-08,
                    5.960464477539063e-08,
                    1e-10,
                    0.1,
                    1 / 3,
                ]
            ),
            # halfway cases between adjacent halves
            (np.arange(2048, 4096) + 0.5) / 2048.0,
        ]
    )
    got = np.array([_core._array.double_to_half(float(v)) for v in values], np.uint16)
    with np.errstate(over="ignore"):
        want = values.astype(np.float16).view(np.uint16)
    nan = np.isnan(values)
    assert (got[~nan] == want[~nan]).all()
    assert np.isnan(got[nan].view(np.float16)).all()


def test_code_of_and_ctypes():
    for code, dt in enumerate(DTYPES):
        assert _dtypes.code_of(dt) == code
        assert _dtypes.dtype_of_code(code) == dt
    assert _dtypes.ctype(np.float16) == "__half"
    assert _dtypes.ctype(np.complex128) == "cuda::std::complex<double>"
    assert _dtypes.ctype(np.int64) == "long long"
    assert _dtypes.headers_for([np.float32, np.int8]) == []
    assert _dtypes.headers_for([np.float16]) == ["#include <cuda_fp16.h>"]
    assert "#include <cuda/std/complex>" in _dtypes.headers_for([np.complex64])
    assert _dtypes.tag(np.complex128) == "c16" and _dtypes.tag(bool) == "b1"


# ---- broadcasting ------------------------------------------------------------------------------


def _shapes(rng, n):
    out = []
    for _ in range(n):
        nd = rng.integers(0, 5)
        base = tuple(int(x) for x in rng.integers(0, 4, nd))
        other = tuple(
            int(x) if rng.random() < 0.6 else int(rng.choice([1, x, x + 1]))
            for x in base[rng.integers(0, nd + 1) :]
        )
        out.append((base, other))
    return out


def test_broadcast_shapes_match_numpy():
    from cuplug.gpuarray import GPUArray

    rng = np.random.default_rng(7)
    for sa, sb in _shapes(rng, 400):
        a = GPUArray(sa, np.float32, gpudata=1 << 20)
        b = GPUArray(sb, np.int16, gpudata=1 << 24)
        try:
            want = np.broadcast_shapes(sa, sb)
        except ValueError:
            with pytest.raises(ValueError) as info:
                broadcast_shape(a, b)
            message = str(info.value)
            assert str(sa) in message and str(sb) in message
            assert "float32" in message and "int16" in message
            continue
        assert broadcast_shape(a, b) == want
        core = _resolve("add", (np.dtype(np.float32), np.dtype(np.int16)), None)[0]
        out = GPUArray(want, np.float32, gpudata=1 << 28)
        assert core.plan(out, a, b)["iter_shape"] == want
