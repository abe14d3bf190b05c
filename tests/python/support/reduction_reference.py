"""NumPy's answers for the reduction tests (test_axis_reductions_emulated.py on the host emulator,
test_axis_reductions_gpu.py on a GPU, test_axis_reductions.py's resolution checks): values each
reduction is defined on, the layouts the planner tells apart, NumPy's result with float work in
float64 (cuplug accumulates in double), and the comparison (exact for integers and bools, a few
ulps of the result dtype for floats)."""

from __future__ import annotations

import warnings

import numpy as np


def numpy_result(kind, x, axis=None, keepdims=False, dtype=None, out=None, ddof=0):
    """What NumPy returns (or the exception type it raises), warnings silenced."""
    kwargs = {"axis": axis}
    if keepdims:
        kwargs["keepdims"] = True
    if dtype is not None:
        kwargs["dtype"] = dtype
    if out is not None:
        kwargs["out"] = out
    if kind in ("var", "std", "nanvar", "nanstd") and ddof:
        kwargs["ddof"] = ddof
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return np.asarray(getattr(np, kind)(x, **kwargs))
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return e


def host_values(dtype, shape, rng, kind):
    """Host values of dtype for reduction kind: products near 1 in size (no overflow to inf,
    whose NaN patterns differ between libraries), some NaNs where NaN rules matter."""
    n = int(np.prod(shape))
    if dtype.kind == "b":
        v = rng.random(n) < (0.9 if kind == "all" else 0.1 if kind == "any" else 0.5)
    elif dtype.kind in "iu":
        v = rng.integers(0, 3 if "prod" in kind else 50, n)
    else:
        v = rng.uniform(0.5, 1.5, n) if "prod" in kind else rng.standard_normal(n)
        if dtype.kind == "c":
            v = v + 1j * (rng.uniform(-0.2, 0.2, n) if "prod" in kind else rng.standard_normal(n))
        if kind.startswith("nan") or kind in ("min", "max", "argmin", "argmax"):
            v[rng.random(n) < 0.05] = np.nan
    return np.asarray(v).astype(dtype).reshape(shape)


def reference(kind, x, axis, keepdims, dtype, ddof):
    """NumPy's answer, float work done in float64 (cuplug accumulates in double)."""
    want = numpy_result(kind, x, axis, keepdims, dtype, ddof=ddof)
    if x.dtype.kind in "fc" and kind not in ("min", "max", "nanmin", "nanmax", "argmin", "argmax"):
        wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
        exact = numpy_result(kind, wide, axis, keepdims, None, ddof=ddof)
        with np.errstate(all="ignore"):
            want = np.asarray(exact).astype(want.dtype)
    return want


def assert_matches(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        tol = {2: 2e-3, 4: 2e-6, 8: 1e-12}[np.finfo(want.dtype).dtype.itemsize]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=what)


def layouts(base):
    """(name, host view) of base (a C array): the layout classes the planner tells apart."""
    yield "C", base
    yield "F", np.asfortranarray(base)
    if base.ndim >= 2:
        big = np.concatenate([base, base], axis=-1)
        yield "strided", big[..., ::2]
        yield "negative", base[::-1, ..., ::-1]
        yield "transposed", np.ascontiguousarray(base.T).T
        yield "offset", big.reshape(-1)[1 : 1 + base.size].reshape(base.shape)  # unaligned
        yield "broadcast", np.broadcast_to(base[:1], base.shape)
