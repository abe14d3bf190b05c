"""C expressions converting between the dtypes arrays compute with, as NumPy converts: casts
with NumPy's unsafe-cast semantics (complex to real keeps the real part, float to int
truncates), and the loads and stores around an operation computed in its loop dtype (float16
computed in float and rounded once, as NumPy's half loops do). Pure source text; the operation
table (ops.py) and its kernels build on these.
"""

from __future__ import annotations

import numpy as np

from cuplug import _dtypes

__all__ = ["cast", "compute_type", "kind", "load", "real_ctype", "store"]


def kind(dt):
    """One letter per family NumPy's loops compute in: b(ool), i(nt), u(nsigned), h(alf),
    f(loat), c(omplex)."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return "b"
    if dt.kind == "i":
        return "i"
    if dt.kind == "u":
        return "u"
    if dt.kind == "f":
        return "h" if dt.itemsize == 2 else "f"
    if dt.kind == "c":
        return "c"
    raise TypeError(f"dtype {dt} is not supported in array arithmetic")


def real_ctype(dt):
    """float / double for complex and float dtypes (float for float16)."""
    dt = np.dtype(dt)
    if dt.kind == "c":
        return "float" if dt.itemsize == 8 else "double"
    return "double" if dt.itemsize == 8 else "float"


def compute_type(dt):
    """The C type an operation computes in for loop dtype dt."""
    dt = np.dtype(dt)
    return "float" if dt == np.float16 else _dtypes.ctype(dt)


def cast(expr, src, dst):
    """C expression converting ``expr`` (of dtype src) to dtype dst as NumPy's unsafe cast does
    (complex to real keeps the real part; float to int truncates)."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst:
        return expr
    ks, kd = kind(src), kind(dst)
    if kd == "b":
        if ks == "h":
            return f"(__half2float({expr}) != 0.0f)"
        if ks == "c":
            return f"(({expr}).real() != 0 || ({expr}).imag() != 0)"
        return f"(({expr}) != 0)"
    if kd == "h":
        if ks == "f" and src.itemsize == 4:
            return f"__float2half_rn({expr})"
        if ks == "f":
            return f"__double2half({expr})"
        if ks == "c":
            return cast(f"({expr}).real()", _real_of(src), dst)
        return f"__double2half((double)({expr}))"
    if kd == "c":
        t = real_ctype(dst)
        ct = _dtypes.ctype(dst)
        if ks == "c":
            return f"{ct}({expr})"
        if ks == "h":
            return f"{ct}(({t})__half2float({expr}))"
        return f"{ct}(({t})({expr}))"
    ct = _dtypes.ctype(dst)
    if ks == "h":
        return f"(({ct})__half2float({expr}))"
    if ks == "c":
        return f"(({ct})({expr}).real())"
    return f"(({ct})({expr}))"


def _real_of(dt):
    return np.dtype(np.float32) if np.dtype(dt).itemsize == 8 else np.dtype(np.float64)


def load(expr, src, loop):
    """expr of dtype src as the compute type of loop dtype `loop` (through the loop dtype)."""
    loop = np.dtype(loop)
    v = cast(expr, src, loop)
    if loop == np.float16:
        return f"__half2float({v})"
    return v


def store(expr, loop, dst):
    """expr in the compute type of loop dtype `loop`, stored as dtype dst."""
    loop = np.dtype(loop)
    if loop == np.float16:
        return cast(f"__float2half_rn({expr})", loop, dst)
    return cast(f"(({_dtypes.ctype(loop)})({expr}))", loop, dst)
