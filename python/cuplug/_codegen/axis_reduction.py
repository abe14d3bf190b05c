"""Source generation for NumPy's reductions over axes (sum, prod, min, max, argmin, argmax, any,
all, mean, var, std and their nan forms): what each computes as C (:func:`spec`) and the module
of kernels that run it over one reduced dimension of a strided array (:func:`generate`). Pure
functions of their arguments (no device, no compiler), so CI compiles what they produce.

One launch reduces one dimension (length ``n``, stride ``s_red`` elements) for each of ``m``
outputs; the kept dimensions (up to MAXD, outer to inner) give every output ``o`` (a C-order
linear index over them) its input offset and its output offset (each dimension has both
strides). Several reduced dimensions that do not merge are reduced one launch after another
through temporaries of the accumulator type; a dimension split into ``splits`` chunks (so that
a few outputs still fill the GPU) leaves partial values ``[split][m]`` that a second launch
reduces. Every split is a function of the shape and the device, never of timing, so float
results have the same bits on every run.

Entries ``<name>_rows``, ``<name>_cols`` and their ``...a`` forms (the input is accumulator
values of an earlier launch instead of array elements), each taking one ``cuplug_params``
struct (PARAMS); a module holds the entries asked for (:func:`generate`):

* cols: a thread owns W <= V consecutive outputs (``group``) and walks the reduced dimension,
  so a warp's loads are consecutive when the innermost kept dimension is (``x.sum(axis=0)`` in
  C order). With ``vec`` set, the V values of one row come in one 16-byte load.
* rows: a warp or a block (``group`` = 32 or 256) owns one output (one split of it); thread
  ``t`` takes elements ``(t + k*G)*V + j`` (j < V) in order and the group combines its threads'
  values in a fixed tree (``x.sum(axis=-1)``). With ``vec`` set, the V elements come in one
  16-byte load; the order of the combination is the same either way.

Trees run in shared memory with ``__syncthreads`` / ``__syncwarp`` (any accumulator type, structs
too). CUB is not included: it costs NVRTC 1.5 s per new kernel (docs/dependencies.md). The
entries' device code is the templates of axis_reduction_device.py; this module writes what each
reduction computes and fills them in.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from cuplug import _dtypes

from . import axis_reduction_device as _dev
from .casts import cast

__all__ = [
    "BLOCK",
    "ENTRIES",
    "KINDS",
    "MAXD",
    "PARAMS",
    "Spec",
    "entry",
    "generate",
    "spec",
    "vector_width",
]

#: Threads per block of every entry.
BLOCK = 256
#: Kept dimensions a launch handles (more are copied into fewer first).
MAXD = 8
#: Successive row steps whose loads are issued before their values are combined.
UNROLL = 2
#: The same for columns: a thread's rows of 16 bytes (fewer threads fit an SM: more loads each).
COLS_UNROLL = 4

#: The kernel parameter block (native order, no padding): out, in, m, n, s_red, chunk, splits,
#: denom, nd, final, vec, group, shape[MAXD], in_strides[MAXD], out_strides[MAXD].
PARAMS = struct.Struct(f"=QQQQqQQdiiii{MAXD}Q{MAXD}q{MAXD}q")

#: Reductions :func:`spec` knows, by name.
KINDS = (
    "sum",
    "prod",
    "nansum",
    "nanprod",
    "min",
    "max",
    "nanmin",
    "nanmax",
    "argmin",
    "argmax",
    "any",
    "all",
    "mean",
    "nanmean",
    "var",
    "std",
    "nanvar",
    "nanstd",
)


@dataclass(frozen=True)
class Spec:
    """One reduction as C: ``acc_type`` values start at ``neutral``, element ``x`` (of ``in_dtype``,
    at index ``r`` of the reduced dimension) becomes ``map_expr``, two are combined by
    ``reduce_expr`` (of ``a`` and ``b``; any order of the two must give the same result up to
    rounding), and the result is ``final_expr`` (of ``a`` and the double ``denom``) of
    ``out_dtype``. ``acc_size``: bytes of acc_type (temporaries, vector widths)."""

    name: str
    in_dtype: np.dtype
    out_dtype: np.dtype
    acc_ctype: str
    acc_size: int
    neutral: str
    map_expr: str
    reduce_expr: str
    final_expr: str
    preamble: str = ""
    dtypes: tuple = ()


def _dt(d):
    return np.dtype(d)


def _acc_for(dtype):
    """The accumulator of sums in dtype: float16/32 in double, complex64 in complex128 (at
    least NumPy's pairwise accuracy, free in a memory-bound kernel); others as they are."""
    dtype = _dt(dtype)
    if dtype.kind == "f" and dtype.itemsize < 8:
        return _dt(np.float64)
    if dtype.kind == "c" and dtype.itemsize < 16:
        return _dt(np.complex128)
    return dtype


def _compare_dtype(dtype):
    """Where min/max compare: float16 in float (exact both ways)."""
    dtype = _dt(dtype)
    return _dt(np.float32) if dtype == np.float16 else dtype


_INF = {
    4: ("__int_as_float(0x7f800000)", "__int_as_float(0xff800000)"),
    8: ("__longlong_as_double(0x7ff0000000000000LL)", "__longlong_as_double(0xfff0000000000000LL)"),
}
_NAN = {4: "__int_as_float(0x7fffffff)", 8: "__longlong_as_double(0x7ff8000000000000LL)"}


def _extreme(dtype, largest):
    """C expression of dtype's largest (smallest) value; the infinities for floats."""
    dtype = _dt(dtype)
    if dtype.kind == "f":
        return _INF[dtype.itemsize][0 if largest else 1]
    if dtype.kind == "b":
        return "true" if largest else "false"
    info = np.iinfo(dtype)
    value = info.max if largest else info.min
    ct = _dtypes.ctype(dtype)
    if value == np.iinfo(np.int64).min:
        return f"(({ct})(-9223372036854775807LL - 1))"
    return f"(({ct}){value}{'ULL' if dtype.kind == 'u' else 'LL'})"


def _isnan(x, dtype):
    dtype = _dt(dtype)
    if dtype.kind == "c":
        return f"(isnan(({x}).real()) || isnan(({x}).imag()))"
    if dtype == np.float16:
        return f"__hisnan({x})"
    return f"isnan({x})"


def _real(dtype):
    dtype = _dt(dtype)
    return _dt(np.float32 if dtype.itemsize == 8 else np.float64) if dtype.kind == "c" else dtype


def _name(kind, *dtypes):
    return "cuplug_axis_" + kind + "_" + "_".join(_dtypes.tag(d) for d in dtypes)


def spec(kind, in_dtype, compute_dtype, result_dtype, out_dtype=None):
    """The :class:`Spec` of reduction ``kind`` over elements of ``in_dtype``: elements are cast
    to ``compute_dtype`` (NumPy's ``dtype=``), the result has ``result_dtype`` (NumPy's) and is
    stored as ``out_dtype`` (an ``out=`` array's, default the result's) with NumPy's cast."""
    x = _dt(in_dtype)
    c = _dt(compute_dtype)
    res = _dt(result_dtype)
    o = res if out_dtype is None else _dt(out_dtype)
    if kind not in KINDS:
        raise ValueError(f"unknown reduction {kind!r}; known: {', '.join(KINDS)}")
    if x.kind not in "biufc":
        raise TypeError(f"{kind}: not defined for dtype {x}")
    name = _name(kind, x, c, res, o)
    build = _BUILDERS[kind.removeprefix("nan") if kind.startswith("nan") else kind]
    return build(kind, name, x, c, res, o)


def _finish(expr, src, res, o):
    """expr (of dtype src) as the result dtype, then as the output's."""
    return cast(cast(expr, src, res), res, o)


def _sum_like(kind, name, x, c, res, o):
    a = _acc_for(c)
    product = kind in ("prod", "nanprod")
    if a.kind == "b":  # dtype=bool: NumPy's add and multiply of bools are or / and
        op = "(a && b)" if product else "(a || b)"
    else:
        op = "(a * b)" if product else "(a + b)"
    neutral = "acc_type(1)" if product else "acc_type(0)"
    value = cast(cast("x", x, c), c, a)
    if kind.startswith("nan") and x.kind in "fc":
        value = f"({_isnan('x', x)} ? {neutral} : acc_type({value}))"
    return Spec(
        name, x, o, _dtypes.ctype(a), a.itemsize, neutral, value, op,
        _finish(cast("a", a, c), c, res, o), dtypes=(x, c, a, res, o),
    )  # fmt: skip


def _minmax(kind, name, x, c, res, o):
    if x.kind == "c":
        raise TypeError(f"{kind}: not defined for complex dtype {x} (real numbers and integers)")
    a = _compare_dtype(x)
    smaller = kind.endswith("min")
    op = "<" if smaller else ">"
    if a.kind == "f":
        if kind.startswith("nan"):
            # NaNs are skipped; an all-NaN slice stays at the neutral NaN (NumPy's answer).
            neutral = _NAN[a.itemsize]
            reduce = f"((a != a) ? b : ((b != b) ? a : ((b {op} a) ? b : a)))"
        else:
            neutral = _extreme(a, smaller)
            reduce = f"((a != a) ? a : ((b != b) ? b : ((b {op} a) ? b : a)))"
    else:
        neutral = _extreme(a, smaller)
        reduce = f"((b {op} a) ? b : a)"
    return Spec(
        name, x, o, _dtypes.ctype(a), a.itemsize, neutral, cast("x", x, a), reduce,
        _finish(cast("a", a, x), x, res, o), dtypes=(x, a, res, o),
    )  # fmt: skip


def _argminmax(kind, name, x, c, res, o):
    if x.kind == "c":
        raise TypeError(f"{kind}: not defined for complex dtype {x} (real numbers and integers)")
    a = _compare_dtype(x)
    smaller = kind == "argmin"
    op = "<" if smaller else ">"
    vt = _dtypes.ctype(a)
    preamble = f"struct cuplug_arg {{ {vt} v; long long i; }};"
    # The first of equal values (and the first NaN) wins, whichever side it comes from.
    nan = (
        "(a.v != a.v) ? ((b.v != b.v && b.i < a.i) ? b : a) : (b.v != b.v) ? b : "
        if (a.kind == "f")
        else ""
    )
    reduce = f"({nan}((b.v {op} a.v) ? b : ((a.v {op} b.v) ? a : ((b.i < a.i) ? b : a))))"
    return Spec(
        name, x, o, "cuplug_arg", 16,
        f"cuplug_arg{{{_extreme(a, smaller)}, 0x7fffffffffffffffLL}}",
        f"cuplug_arg{{{cast('x', x, a)}, r}}", reduce,
        _finish("a.i", _dt(np.int64), res, o), preamble, dtypes=(x, a, res, o),
    )  # fmt: skip


def _anyall(kind, name, x, c, res, o):
    b = _dt(np.bool_)
    op = "(a || b)" if kind == "any" else "(a && b)"
    neutral = "false" if kind == "any" else "true"
    return Spec(
        name, x, o, "bool", 1, neutral, cast("x", x, b), op, _finish("a", b, res, o),
        dtypes=(x, res, o),
    )  # fmt: skip


def _mean(kind, name, x, c, res, o):
    a = _acc_for(c)
    value = cast(cast("x", x, c), c, a)

    def quotient(total, count):
        if a.kind in "biu":  # dtype=int: NumPy sums in it, divides in double, casts back
            return cast(f"((double){total} / {count})", _dt(np.float64), c)
        return cast(f"({total} / {count})", a, c)

    if kind == "nanmean" and x.kind in "fc":
        # Complex members first: no padding whatever their alignment.
        preamble = (
            f"typedef {_dtypes.ctype(a)} acc_sum;\n"
            "struct cuplug_nanmean { acc_sum s; double c; };"
        )
        skip = "cuplug_nanmean{acc_sum(0), 0.0}"
        return Spec(
            name, x, o, "cuplug_nanmean", 32 if a.kind == "c" else 16, skip,
            f"({_isnan('x', x)} ? {skip} : cuplug_nanmean{{acc_sum({value}), 1.0}})",
            "cuplug_nanmean{a.s + b.s, a.c + b.c}", _finish(quotient("a.s", "a.c"), c, res, o),
            preamble, dtypes=(x, c, a, res, o),
        )  # fmt: skip
    return Spec(
        name, x, o, _dtypes.ctype(a), a.itemsize, "acc_type(0)", value, "(a + b)",
        _finish(quotient("a", "denom"), c, res, o), dtypes=(x, c, a, res, o),
    )  # fmt: skip


_WELFORD = """\
typedef {mean} cuplug_mean_t;
// The mean first: no padding whatever its alignment.
struct cuplug_welford {{ cuplug_mean_t mean; double n, m2; }};
__device__ __forceinline__ double cuplug_abs2(const double d) {{ return d * d; }}
{abs2_complex}
// Chan et al.'s pairwise update: any split of the elements gives the same moments up to
// rounding, so the fixed combination order of the kernels is all determinism needs.
__device__ __forceinline__ cuplug_welford cuplug_merge(const cuplug_welford a,
                                                      const cuplug_welford b)
{{
  if (b.n == 0.0)
    return a;
  if (a.n == 0.0)
    return b;
  const double n = a.n + b.n;
  const double f = b.n / n;
  const cuplug_mean_t d = b.mean - a.mean;
  return cuplug_welford{{a.mean + d * f, n, a.m2 + b.m2 + cuplug_abs2(d) * (a.n * f)}};
}}
"""
_ABS2_COMPLEX = """\
__device__ __forceinline__ double cuplug_abs2(const cuda::std::complex<double> d)
{
  return d.real() * d.real() + d.imag() * d.imag();
}"""


def _var(kind, name, x, c, res, o):
    mean = _dt(np.complex128 if c.kind == "c" else np.float64)
    preamble = _WELFORD.format(
        mean=_dtypes.ctype(mean), abs2_complex=_ABS2_COMPLEX if mean.kind == "c" else ""
    )
    value = f"cuplug_welford{{{cast(cast('x', x, c), c, mean)}, 1.0, 0.0}}"
    if kind.startswith("nan") and x.kind in "fc":
        value = f"({_isnan('x', x)} ? cuplug_welford{{cuplug_mean_t(0), 0.0, 0.0}} : {value})"
    # NumPy divides by max(n - ddof, 0): a zero gives inf or NaN, as there.
    var = "(a.m2 / fmax(a.n - denom, 0.0))"
    if kind.endswith("std"):
        var = f"sqrt{var}"
    return Spec(
        name, x, o, "cuplug_welford", 32 if mean.kind == "c" else 24,
        "cuplug_welford{cuplug_mean_t(0), 0.0, 0.0}", value, "cuplug_merge(a, b)",
        _finish(var, _dt(np.float64), res, o), preamble, dtypes=(x, c, mean, res, o),
    )  # fmt: skip


_BUILDERS = {
    "sum": _sum_like,
    "prod": _sum_like,
    "min": _minmax,
    "max": _minmax,
    "argmin": _argminmax,
    "argmax": _argminmax,
    "any": _anyall,
    "all": _anyall,
    "mean": _mean,
    "var": _var,
    "std": _var,
}


def vector_width(itemsize, kind):
    """Elements a thread takes per step (one 16-byte load when aligned): "rows" take 16 bytes,
    "cols" at most 4 outputs (their accumulators live in registers)."""
    if itemsize not in (1, 2, 4, 8, 16):
        return 1
    v = 16 // itemsize
    return min(v, 4 if kind == "cols" else 8)


#: The entries of a module: "rows" (a warp or a block per output), "cols" (a thread per V
#: outputs), each over array elements or ("...a") over accumulator values of an earlier launch.
ENTRIES = ("rows", "cols", "rowsa", "colsa")


def entry(name, kind):
    return f"{name}_{kind}"


def generate(sp, entries=ENTRIES):
    """The module source (str) of a :class:`Spec` with the given entries (see ENTRIES; each
    named :func:`entry` (sp.name, kind)). One entry per module keeps a cold compile short."""
    head = list(_dtypes.headers_for(sp.dtypes))
    source = "\n".join(head) + ("\n" if head else "")
    source += (
        f"typedef {_dtypes.ctype(sp.in_dtype)} in_type;\n"
        f"typedef {_dtypes.ctype(sp.out_dtype)} out_type;\n"
    )
    if sp.preamble:
        source += sp.preamble + "\n"
    source += f"typedef {sp.acc_ctype} acc_type;\n"
    source += _dev.COMMON.format(
        maxd=MAXD,
        block=BLOCK,
        unroll=UNROLL,
        cols_unroll=COLS_UNROLL,
        reduce_expr=sp.reduce_expr,
        final_expr=sp.final_expr,
    )
    if any(not e.endswith("a") for e in entries):
        source += _dev.MAP.format(map_expr=sp.map_expr)
    for kind in entries:
        if kind not in ENTRIES:
            raise ValueError(f"unknown entry kind {kind!r}; known: {', '.join(ENTRIES)}")
        from_acc = kind.endswith("a")
        base = kind.rstrip("a")
        size = sp.acc_size if from_acc else sp.in_dtype.itemsize
        template = _dev.ROWS if base == "rows" else _dev.COLS
        source += template.format(
            entry=entry(sp.name, kind),
            src="acc_type" if from_acc else "in_type",
            vec=vector_width(size, base),
            neutral=sp.neutral,
            get="cuplug_same" if from_acc else "cuplug_map",
        )
    return source
