"""C expressions for NumPy's elementwise operations on every dtype arrays compute with: casts
with NumPy's semantics, and each operation in its loop dtype (float16 computed in float and
rounded once, as NumPy's half loops do). Pure: the array layer turns these into kernels.

:func:`operation` is the entry point: the statement ``z[i] = ...`` for a ufunc name given the
operand dtypes, NumPy's loop dtypes and the output dtype, plus the helper definitions (preamble)
it needs. Each helper is guarded, so preambles of many kernels can share one source.
"""

from __future__ import annotations

import numpy as np

from cuplug import _dtypes

__all__ = ["OPS", "cast", "operation"]


def _kind(dt):
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


def _real_ctype(dt):
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
    ks, kd = _kind(src), _kind(dst)
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
        t = _real_ctype(dst)
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


# ---- helpers ------------------------------------------------------------------------------------

_SIGNED = "(T(-1) < T(0))"

HELPERS = {
    "floordiv_int": f"""
template <class T> __device__ __forceinline__ T cuplug_floordiv(T a, T b) {{
  if (b == 0) return T(0);
  if constexpr ({_SIGNED}) {{
    if (b == T(-1)) return T(0 - (unsigned long long)a);
    T q = a / b;
    if (((a > 0) != (b > 0)) && q * b != a) --q;
    return q;
  }}
  return a / b;
}}""",
    "mod_int": f"""
template <class T> __device__ __forceinline__ T cuplug_mod(T a, T b) {{
  if (b == 0) return T(0);
  if constexpr ({_SIGNED}) {{
    if (b == T(-1)) return T(0);
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }}
  return a % b;
}}""",
    # NumPy's npy_divmod / npy_floor_divide / npy_remainder for floating point.
    "divmod_float": """
template <class T> __device__ __forceinline__ T cuplug_fdivmod(T a, T b, T *modulus) {
  T mod = fmod(a, b);
  if (!b) { *modulus = mod; return a / b; }
  T div = (a - mod) / b;
  if (mod) {
    if ((b < 0) != (mod < 0)) { mod += b; div -= T(1); }
  } else {
    mod = copysign(T(0), b);
  }
  T floordiv;
  if (div) {
    floordiv = floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
  } else {
    floordiv = copysign(T(0), a / b);
  }
  *modulus = mod;
  return floordiv;
}
template <class T> __device__ __forceinline__ T cuplug_ffloordiv(T a, T b) {
  if (!b) return a / b;
  T mod;
  return cuplug_fdivmod(a, b, &mod);
}
template <class T> __device__ __forceinline__ T cuplug_fmod_py(T a, T b) {
  if (!b) return fmod(a, b);
  T mod;
  cuplug_fdivmod(a, b, &mod);
  return mod;
}""",
    "pow_int": f"""
template <class T> __device__ __forceinline__ T cuplug_ipow(T a, T b) {{
  if constexpr ({_SIGNED}) {{
    if (b < 0) {{
      // NumPy raises for negative integer powers; a kernel cannot: 1 and -1 have exact
      // answers, every other base gives 0 (the integer part of the real answer).
      if (a == T(1)) return T(1);
      if (a == T(-1)) return (b & 1) ? T(-1) : T(1);
      return T(0);
    }}
  }}
  T r = 1;
  while (b) {{
    if (b & 1) r = (T)(r * a);
    b = (T)(b >> 1);
    a = (T)(a * a);
  }}
  return r;
}}""",
    "shift": """
template <class T, class S> __device__ __forceinline__ T cuplug_lshift(T a, S b) {
  if ((unsigned long long)b < sizeof(T) * 8)
    return (T)((unsigned long long)a << b);
  return T(0);
}
template <class T, class S> __device__ __forceinline__ T cuplug_rshift(T a, S b) {
  if ((unsigned long long)b < sizeof(T) * 8) return (T)(a >> b);
  if constexpr (T(-1) < T(0)) return (a < 0) ? T(-1) : T(0);
  return T(0);
}""",
    "cmp_mixed": """
template <class A, class B> __device__ __forceinline__ bool cuplug_lt(A a, B b) {
  if constexpr ((A(-1) < A(0)) && !(B(-1) < B(0)))
    return a < 0 || (unsigned long long)a < (unsigned long long)b;
  else if constexpr (!(A(-1) < A(0)) && (B(-1) < B(0)))
    return b > 0 && (unsigned long long)a < (unsigned long long)b;
  else
    return a < b;
}
template <class A, class B> __device__ __forceinline__ bool cuplug_eq(A a, B b) {
  if constexpr ((A(-1) < A(0)) && !(B(-1) < B(0)))
    return !(a < 0) && (unsigned long long)a == (unsigned long long)b;
  else if constexpr (!(A(-1) < A(0)) && (B(-1) < B(0)))
    return !(b < 0) && (unsigned long long)a == (unsigned long long)b;
  else
    return a == b;
}""",
    "cmp_complex": """
template <class C> __device__ __forceinline__ bool cuplug_clt(C a, C b) {
  return (a.real() < b.real() && !isnan(a.imag()) && !isnan(b.imag())) ||
         (a.real() == b.real() && a.imag() < b.imag());
}
template <class C> __device__ __forceinline__ bool cuplug_cle(C a, C b) {
  return (a.real() < b.real() && !isnan(a.imag()) && !isnan(b.imag())) ||
         (a.real() == b.real() && a.imag() <= b.imag());
}
template <class C> __device__ __forceinline__ bool cuplug_cnan(C a) {
  return isnan(a.real()) || isnan(a.imag());
}""",
    "sign_complex": """
template <class C> __device__ __forceinline__ C cuplug_csign(C a) {
  if (a.real() == 0 && a.imag() == 0) return C(0);
  return a / cuda::std::abs(a);
}""",
}


def _guard(name, body):
    g = "CUPLUG_HELPER_" + name.upper()
    return f"#ifndef {g}\n#define {g}{body}\n#endif\n"


# ---- the operations ------------------------------------------------------------------------------
# Each entry: (numpy ufunc, number of inputs, function(exprs, loop_in, loop_out) -> (C expression
# in the output loop's compute type, [helpers])). exprs are the inputs in their loop dtypes'
# compute types.


def _arith(sym, bool_sym=None):
    def f(x, li, lo):
        if _kind(li[0]) == "b" and bool_sym:
            return f"({x[0]} {bool_sym} {x[1]})", []
        return f"({x[0]} {sym} {x[1]})", []

    return f


def _floordiv(x, li, lo):
    k = _kind(li[0])
    if k in "iu":
        return f"cuplug_floordiv({x[0]}, {x[1]})", ["floordiv_int"]
    if k == "b":
        return f"({x[0]} && {x[1]})", []
    return f"cuplug_ffloordiv({x[0]}, {x[1]})", ["divmod_float"]


def _mod(x, li, lo):
    k = _kind(li[0])
    if k in "iu":
        return f"cuplug_mod({x[0]}, {x[1]})", ["mod_int"]
    if k == "b":
        return "false", []
    return f"cuplug_fmod_py({x[0]}, {x[1]})", ["divmod_float"]


def _power(x, li, lo):
    k = _kind(li[0])
    if k in "iu":
        return f"cuplug_ipow({x[0]}, {x[1]})", ["pow_int"]
    if k == "b":
        return f"({x[0]} || !{x[1]})", []
    if k == "c":
        return f"cuda::std::pow({x[0]}, {x[1]})", []
    return f"pow({x[0]}, {x[1]})", []


def _bitwise(sym, bool_sym):
    def f(x, li, lo):
        if _kind(li[0]) == "b":
            return f"({x[0]} {bool_sym} {x[1]})", []
        return f"({x[0]} {sym} {x[1]})", []

    return f


def _shift(fn):
    def f(x, li, lo):
        return f"{fn}({x[0]}, {x[1]})", ["shift"]

    return f


def _mixed_ints(li):
    return len(li) == 2 and {_kind(li[0]), _kind(li[1])} == {"i", "u"}


def _compare(sym):
    def f(x, li, lo):
        a, b = x
        if _kind(li[0]) == "c":
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


def _extremum(which):
    def f(x, li, lo):
        a, b = x
        k = _kind(li[0])
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


def _fextremum(fn):
    def f(x, li, lo):
        a, b = x
        k = _kind(li[0])
        if k in "fh":
            return f"{fn}({a}, {b})", []
        return _extremum("max" if fn == "fmax" else "min")(x, li, lo)

    return f


def _truth(expr, loop):
    if _kind(loop) == "c":
        return f"(({expr}).real() != 0 || ({expr}).imag() != 0)"
    return f"(({expr}) != 0)"


def _logical(sym):
    def f(x, li, lo):
        return f"({_truth(x[0], li[0])} {sym} {_truth(x[1], li[1])})", []

    return f


def _negative(x, li, lo):
    if _kind(li[0]) == "u":
        return f"(0 - {x[0]})", []
    return f"(-{x[0]})", []


def _absolute(x, li, lo):
    k = _kind(li[0])
    if k in "iu":
        return (f"({x[0]} < 0 ? -{x[0]} : {x[0]})" if k == "i" else x[0]), []
    if k == "b":
        return x[0], []
    if k == "c":
        return f"cuda::std::abs({x[0]})", []
    return f"fabs({x[0]})", []


def _invert(x, li, lo):
    if _kind(li[0]) == "b":
        return f"(!{x[0]})", []
    return f"(~{x[0]})", []


def _sign(x, li, lo):
    a = x[0]
    k = _kind(li[0])
    if k == "i":
        return f"(({a} > 0) - ({a} < 0))", []
    if k in "ub":
        return f"({a} > 0)", []
    if k == "c":
        return f"cuplug_csign({a})", ["sign_complex"]
    return f"({a} > 0 ? 1 : ({a} < 0 ? -1 : ({a} == 0 ? 0 : {a})))", []


def _isnan(x, li, lo):
    k = _kind(li[0])
    if k in "fh":
        return f"isnan({x[0]})", []
    if k == "c":
        return f"(isnan(({x[0]}).real()) || isnan(({x[0]}).imag()))", []
    return "false", []


def _isinf(x, li, lo):
    k = _kind(li[0])
    if k in "fh":
        return f"isinf({x[0]})", []
    if k == "c":
        return f"(isinf(({x[0]}).real()) || isinf(({x[0]}).imag()))", []
    return "false", []


def _isfinite(x, li, lo):
    k = _kind(li[0])
    if k in "fh":
        return f"isfinite({x[0]})", []
    if k == "c":
        return f"(isfinite(({x[0]}).real()) && isfinite(({x[0]}).imag()))", []
    return "true", []


def _rint(x, li, lo):
    k = _kind(li[0])
    if k == "c":
        ct = _dtypes.ctype(li[0])
        return f"{ct}(rint(({x[0]}).real()), rint(({x[0]}).imag()))", []
    if k in "fh":
        return f"rint({x[0]})", []
    return x[0], []


def _conjugate(x, li, lo):
    if _kind(li[0]) == "c":
        return f"cuda::std::conj({x[0]})", []
    return x[0], []


def _copy(x, li, lo):
    return x[0], []


def _where(x, li, lo):
    return f"((bool)({x[0]}) ? {x[1]} : {x[2]})", []


def _clip(x, li, lo):
    a, lo_, hi = x
    k = _kind(li[0])
    if k in "fh":
        mx = f"(isnan({a}) ? {a} : (({a}) > ({lo_}) ? {a} : {lo_}))"
        return f"(isnan({mx}) ? {mx} : (({mx}) < ({hi}) ? {mx} : {hi}))", []
    if k == "c":
        raise TypeError("clip is not supported for complex arrays")
    mx = f"(({a}) > ({lo_}) ? {a} : {lo_})"
    return f"(({mx}) < ({hi}) ? {mx} : {hi})", []


def _um(name):
    um = getattr(np, "_core", None) or np.core
    return getattr(um.umath, name)


#: name -> (numpy ufunc, number of inputs, expression builder)
OPS = {
    "add": (np.add, 2, _arith("+", "||")),
    "subtract": (np.subtract, 2, _arith("-")),
    "multiply": (np.multiply, 2, _arith("*", "&&")),
    "true_divide": (np.true_divide, 2, _arith("/")),
    "floor_divide": (np.floor_divide, 2, _floordiv),
    "remainder": (np.remainder, 2, _mod),
    "power": (np.power, 2, _power),
    "bitwise_and": (np.bitwise_and, 2, _bitwise("&", "&&")),
    "bitwise_or": (np.bitwise_or, 2, _bitwise("|", "||")),
    "bitwise_xor": (np.bitwise_xor, 2, _bitwise("^", "!=")),
    "left_shift": (np.left_shift, 2, _shift("cuplug_lshift")),
    "right_shift": (np.right_shift, 2, _shift("cuplug_rshift")),
    "equal": (np.equal, 2, _compare("==")),
    "not_equal": (np.not_equal, 2, _compare("!=")),
    "less": (np.less, 2, _compare("<")),
    "less_equal": (np.less_equal, 2, _compare("<=")),
    "greater": (np.greater, 2, _compare(">")),
    "greater_equal": (np.greater_equal, 2, _compare(">=")),
    "maximum": (np.maximum, 2, _extremum("max")),
    "minimum": (np.minimum, 2, _extremum("min")),
    "fmax": (np.fmax, 2, _fextremum("fmax")),
    "fmin": (np.fmin, 2, _fextremum("fmin")),
    "logical_and": (np.logical_and, 2, _logical("&&")),
    "logical_or": (np.logical_or, 2, _logical("||")),
    "logical_xor": (np.logical_xor, 2, _logical("!=")),
    "logical_not": (np.logical_not, 1, lambda x, li, lo: (f"(!{_truth(x[0], li[0])})", [])),
    "negative": (np.negative, 1, _negative),
    "positive": (np.positive, 1, _copy),
    "absolute": (np.absolute, 1, _absolute),
    "invert": (np.invert, 1, _invert),
    "sign": (np.sign, 1, _sign),
    "isnan": (np.isnan, 1, _isnan),
    "isinf": (np.isinf, 1, _isinf),
    "isfinite": (np.isfinite, 1, _isfinite),
    "rint": (np.rint, 1, _rint),
    "conjugate": (np.conjugate, 1, _conjugate),
    "clip": (_um("clip"), 3, _clip),
}


def _needs_half(dtypes):
    return any(np.dtype(d) == np.float16 for d in dtypes)


def operation(name, operand_dtypes, scalar, loop_in, loop_out, out_dtype):
    """(statement, preamble) for ``z[i] = name(x0, x1, ...)``.

    operand_dtypes: the dtype each input arrives in (an array's own dtype; for scalars the loop
    dtype, since they are converted on the host); scalar: per input, True when it is passed by
    value (named ``s<k>`` instead of ``x<k>[i]``); loop_in / loop_out: NumPy's loop dtypes;
    out_dtype: the output array's dtype (differs from loop_out for out= and in-place)."""
    if name in ("_copy", "_fill"):
        src = "s0" if scalar[0] else "x0[i]"
        return f"z[i] = {cast(src, operand_dtypes[0], out_dtype)};", ""
    if name == "where":
        c = "s0" if scalar[0] else "x0[i]"
        vals = [
            load(f"s{k}" if scalar[k] else f"x{k}[i]", operand_dtypes[k], loop_out) for k in (1, 2)
        ]
        cond = cast(c, operand_dtypes[0], np.bool_)
        expr = f"({cond} ? {vals[0]} : {vals[1]})"
        return f"z[i] = {store(expr, loop_out, out_dtype)};", ""
    try:
        ufunc, nin, builder = OPS[name]
    except KeyError:
        raise TypeError(f"unknown elementwise operation {name!r}") from None
    xs = [
        load(f"s{k}" if scalar[k] else f"x{k}[i]", operand_dtypes[k], loop_in[k])
        for k in range(nin)
    ]
    expr, helpers = builder(xs, [np.dtype(d) for d in loop_in], np.dtype(loop_out))
    pre = "".join(_guard(h, HELPERS[h]) for h in helpers)
    return f"z[i] = {store(expr, loop_out, out_dtype)};", pre
