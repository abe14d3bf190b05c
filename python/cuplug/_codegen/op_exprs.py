"""The C expressions of NumPy's arithmetic, comparison, bitwise and logic ufuncs, built from the
loop dtypes of their operands (integer division and power need helpers, mixed signed/unsigned
comparisons compare exactly, bool has its own loops, complex orders lexicographically).

Each builder is ``f(exprs, loop_in, loop_out) -> (C expression, [device helper names])``:
``exprs`` are the inputs already in their loop dtypes' compute types, the expression is in the
output loop's compute type. The operation table (ops.py) names one builder per operator row.
"""

from __future__ import annotations

from cuplug import _dtypes

from .casts import kind

# fmt: off
__all__ = [
    "absolute", "arith", "bitwise", "clip", "compare", "conjugate", "copy", "extremum",
    "fextremum", "floordiv", "invert", "isfinite", "isinf", "isnan", "logical", "logical_not",
    "mod", "negative", "power", "rint", "shift", "sign",
]
# fmt: on


def arith(sym, bool_sym=None):
    def f(x, li, lo):
        if kind(li[0]) == "b" and bool_sym:
            return f"({x[0]} {bool_sym} {x[1]})", []
        return f"({x[0]} {sym} {x[1]})", []

    return f


def floordiv(x, li, lo):
    k = kind(li[0])
    if k in "iu":
        return f"cuplug_floordiv({x[0]}, {x[1]})", ["floordiv_int"]
    if k == "b":
        return f"({x[0]} && {x[1]})", []
    return f"cuplug_ffloordiv({x[0]}, {x[1]})", ["divmod_float"]


def mod(x, li, lo):
    k = kind(li[0])
    if k in "iu":
        return f"cuplug_mod({x[0]}, {x[1]})", ["mod_int"]
    if k == "b":
        return "false", []
    return f"cuplug_fmod_py({x[0]}, {x[1]})", ["divmod_float"]


def power(x, li, lo):
    k = kind(li[0])
    if k in "iu":
        return f"cuplug_ipow({x[0]}, {x[1]})", ["pow_int"]
    if k == "b":
        return f"({x[0]} || !{x[1]})", []
    if k == "c":
        return f"cuda::std::pow({x[0]}, {x[1]})", []
    return f"pow({x[0]}, {x[1]})", []


def bitwise(sym, bool_sym):
    def f(x, li, lo):
        if kind(li[0]) == "b":
            return f"({x[0]} {bool_sym} {x[1]})", []
        return f"({x[0]} {sym} {x[1]})", []

    return f


def shift(fn):
    def f(x, li, lo):
        return f"{fn}({x[0]}, {x[1]})", ["shift"]

    return f


def _mixed_ints(li):
    return len(li) == 2 and {kind(li[0]), kind(li[1])} == {"i", "u"}


def compare(sym):
    def f(x, li, lo):
        a, b = x
        if kind(li[0]) == "c":
            if sym == "==":
                return f"({a} == {b})", []
            if sym == "!=":
                return f"({a} != {b})", []
            fn = {"<": "cuplug_clt", "<=": "cuplug_cle"}.get(sym)
            if fn is None:
                fn = {">": "cuplug_clt", ">=": "cuplug_cle"}[sym]
                a, b = b, a
            return f"{fn}({a}, {b})", ["cmp_complex"]
        if _mixed_ints(li):
            if sym in ("==", "!="):
                e = f"cuplug_eq({a}, {b})"
                return (e if sym == "==" else f"!{e}"), ["cmp_mixed"]
            if sym == "<":
                return f"cuplug_lt({a}, {b})", ["cmp_mixed"]
            if sym == ">":
                return f"cuplug_lt({b}, {a})", ["cmp_mixed"]
            if sym == "<=":
                return f"!cuplug_lt({b}, {a})", ["cmp_mixed"]
            return f"!cuplug_lt({a}, {b})", ["cmp_mixed"]
        return f"({a} {sym} {b})", []

    return f


def extremum(which):
    def f(x, li, lo):
        a, b = x
        k = kind(li[0])
        if k in "fh":
            sym = ">" if which == "max" else "<"
            return f"(isnan({a}) ? {a} : (({a}) {sym} ({b}) ? {a} : {b}))", []
        if k == "c":
            # NumPy: x if x >= y (lexicographic) or x is nan, else y.
            if which == "max":
                return f"((cuplug_cle({b}, {a}) || cuplug_cnan({a})) ? {a} : {b})", ["cmp_complex"]
            return f"((cuplug_cle({a}, {b}) || cuplug_cnan({a})) ? {a} : {b})", ["cmp_complex"]
        if _mixed_ints(li):
            raise TypeError("mixed signed/unsigned 64-bit extremum has no NumPy loop")
        sym = ">" if which == "max" else "<"
        return f"(({a}) {sym} ({b}) ? {a} : {b})", []

    return f


def fextremum(fn):
    def f(x, li, lo):
        a, b = x
        k = kind(li[0])
        if k in "fh":
            return f"{fn}({a}, {b})", []
        return extremum("max" if fn == "fmax" else "min")(x, li, lo)

    return f


def _truth(expr, loop):
    if kind(loop) == "c":
        return f"(({expr}).real() != 0 || ({expr}).imag() != 0)"
    return f"(({expr}) != 0)"


def logical(sym):
    def f(x, li, lo):
        return f"({_truth(x[0], li[0])} {sym} {_truth(x[1], li[1])})", []

    return f


def logical_not(x, li, lo):
    return f"(!{_truth(x[0], li[0])})", []


def negative(x, li, lo):
    if kind(li[0]) == "u":
        return f"(0 - {x[0]})", []
    return f"(-{x[0]})", []


def absolute(x, li, lo):
    k = kind(li[0])
    if k in "iu":
        return (f"({x[0]} < 0 ? -{x[0]} : {x[0]})" if k == "i" else x[0]), []
    if k == "b":
        return x[0], []
    if k == "c":
        return f"cuda::std::abs({x[0]})", []
    return f"fabs({x[0]})", []


def invert(x, li, lo):
    if kind(li[0]) == "b":
        return f"(!{x[0]})", []
    return f"(~{x[0]})", []


def sign(x, li, lo):
    a = x[0]
    k = kind(li[0])
    if k == "i":
        return f"(({a} > 0) - ({a} < 0))", []
    if k in "ub":
        return f"({a} > 0)", []
    if k == "c":
        return f"cuplug_csign({a})", ["sign_complex"]
    return f"({a} > 0 ? 1 : ({a} < 0 ? -1 : ({a} == 0 ? 0 : {a})))", []


def isnan(x, li, lo):
    k = kind(li[0])
    if k in "fh":
        return f"isnan({x[0]})", []
    if k == "c":
        return f"(isnan(({x[0]}).real()) || isnan(({x[0]}).imag()))", []
    return "false", []


def isinf(x, li, lo):
    k = kind(li[0])
    if k in "fh":
        return f"isinf({x[0]})", []
    if k == "c":
        return f"(isinf(({x[0]}).real()) || isinf(({x[0]}).imag()))", []
    return "false", []


def isfinite(x, li, lo):
    k = kind(li[0])
    if k in "fh":
        return f"isfinite({x[0]})", []
    if k == "c":
        return f"(isfinite(({x[0]}).real()) && isfinite(({x[0]}).imag()))", []
    return "true", []


def rint(x, li, lo):
    k = kind(li[0])
    if k == "c":
        ct = _dtypes.ctype(li[0])
        return f"{ct}(rint(({x[0]}).real()), rint(({x[0]}).imag()))", []
    if k in "fh":
        return f"rint({x[0]})", []
    return x[0], []


def conjugate(x, li, lo):
    if kind(li[0]) == "c":
        return f"cuda::std::conj({x[0]})", []
    return x[0], []


def copy(x, li, lo):
    return x[0], []


def clip(x, li, lo):
    a, lo_, hi = x
    k = kind(li[0])
    if k in "fh":
        mx = f"(isnan({a}) ? {a} : (({a}) > ({lo_}) ? {a} : {lo_}))"
        return f"(isnan({mx}) ? {mx} : (({mx}) < ({hi}) ? {mx} : {hi}))", []
    if k == "c":
        # NumPy: minimum(maximum(x, lo), hi) in the lexicographic order, nan propagating.
        mx = f"((cuplug_cle({lo_}, {a}) || cuplug_cnan({a})) ? {a} : {lo_})"
        return f"((cuplug_cle({mx}, {hi}) || cuplug_cnan({mx})) ? {mx} : {hi})", ["cmp_complex"]
    mx = f"(({a}) > ({lo_}) ? {a} : {lo_})"
    return f"(({mx}) < ({hi}) ? {mx} : {hi})", []
