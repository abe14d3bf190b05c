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
too). CUB is not included: it costs NVRTC 1.5 s per new kernel (docs/dependencies.md).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from cuplug import _dtypes

from .ufuncs import cast

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


_COMMON = """\
#define CUPLUG_BLOCK {block}
#define UNROLL {unroll}
#define COLS_UNROLL {cols_unroll}
struct cuplug_params {{
  void *out;
  const void *in;
  unsigned long long m, n;
  long long s_red;
  unsigned long long chunk, splits;
  double denom;
  int nd, final, vec, group;
  unsigned long long shape[{maxd}];
  long long in_s[{maxd}], out_s[{maxd}];
}};
__device__ __forceinline__ acc_type cuplug_reduce(const acc_type a, const acc_type b)
{{
  return {reduce_expr};
}}
__device__ __forceinline__ acc_type cuplug_same(const acc_type v, const long long) {{ return v; }}
// Offsets (elements) of output o in the input and the output; o is C-order over the dims.
__device__ __forceinline__ void cuplug_offsets(unsigned long long o, const cuplug_params &p,
                                               long long &io, long long &oo)
{{
  io = 0;
  oo = 0;
#pragma unroll 1
  for (int j = p.nd - 1; j > 0; --j) {{
    const unsigned long long q = o / p.shape[j];
    const long long k = (long long)(o - q * p.shape[j]);
    io += k * p.in_s[j];
    oo += k * p.out_s[j];
    o = q;
  }}
  if (p.nd > 0) {{
    io += (long long)o * p.in_s[0];
    oo += (long long)o * p.out_s[0];
  }}
}}
__device__ __forceinline__ void cuplug_store(const cuplug_params &p, unsigned long long g,
                                             long long oo, const acc_type a)
{{
  const double denom = p.denom;
  (void)denom;
  if (p.final)
    static_cast<out_type *>(p.out)[oo] = {final_expr};
  else
    static_cast<acc_type *>(p.out)[g] = a;
}}
template <int BYTES> struct cuplug_word {{ struct type {{ unsigned char b[BYTES]; }}; }};
template <> struct cuplug_word<4> {{ typedef unsigned int type; }};
template <> struct cuplug_word<8> {{ typedef uint2 type; }};
template <> struct cuplug_word<16> {{ typedef uint4 type; }};
// V elements of T in one aligned load.
template <class T, int V> struct cuplug_vec {{
  typename cuplug_word<sizeof(T) * V>::type w;
  __device__ __forceinline__ T operator[](int j) const
  {{
    return reinterpret_cast<const T *>(&w)[j];
  }}
}};
"""

_MAP = """\
__device__ __forceinline__ acc_type cuplug_map(const in_type x, const long long r)
{{
  (void)r;
  return {map_expr};
}}
"""

# Rows: group g = split * m + o (G threads: a warp or the block) reduces elements
# [split*chunk, +chunk) of output o; thread t takes (t + k*G)*V + j, then a fixed tree.
_ROWS = """\
extern "C" __global__ void __launch_bounds__(CUPLUG_BLOCK) {entry}(const cuplug_params p)
{{
  typedef {src} T;
  constexpr int V = {vec};
  const unsigned G = p.group;
  const unsigned long long g = ((unsigned long long)blockIdx.x * CUPLUG_BLOCK + threadIdx.x) / G;
  if (g >= p.m * p.splits)
    return;  // the whole group: it shares g
  const unsigned lane = threadIdx.x % G;
  const unsigned long long split = p.splits == 1 ? 0 : g / p.m;
  const unsigned long long o = g - split * p.m;
  const unsigned long long r0 = split * p.chunk;
  const unsigned long long r1 = p.chunk < p.n - r0 ? r0 + p.chunk : p.n;
  long long io, oo;
  cuplug_offsets(o, p, io, oo);
  const T *row = static_cast<const T *>(p.in) + io;
  const unsigned long long step = (unsigned long long)G * V;
  unsigned long long r = r0 + (unsigned long long)lane * V;
  acc_type acc = {neutral};
  if (V > 1 && p.vec) {{
    // Whole blocks of UNROLL steps: every load issued before the values are combined.
    for (; r + (UNROLL - 1) * step + V <= r1; r += UNROLL * step) {{
      cuplug_vec<T, V> w[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
        w[u] = *reinterpret_cast<const cuplug_vec<T, V> *>(row + r + u * step);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int j = 0; j < V; ++j)
          acc = cuplug_reduce(acc, {get}(w[u][j], (long long)(r + u * step + j)));
    }}
  }}
  // The rest (everything when strided or unaligned) in the same order, V loads at a time.
  for (; r < r1; r += step) {{
    T v[V];
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (r + j < r1)
        v[j] = row[(long long)(r + j) * p.s_red];
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (r + j < r1)
        acc = cuplug_reduce(acc, {get}(v[j], (long long)(r + j)));
  }}
  // The group's values combined in a fixed tree in shared memory (raw storage: __shared__
  // variables may not have constructors, complex has one). Each step reads slots [s, 2s) of
  // the group and writes [0, s): no race within a step.
  __shared__ alignas(acc_type) unsigned char cuplug_smem[CUPLUG_BLOCK * sizeof(acc_type)];
  acc_type *sm = reinterpret_cast<acc_type *>(cuplug_smem);
  const unsigned t = threadIdx.x;
  sm[t] = acc;
  if (G > 32) {{
    __syncthreads();
    for (unsigned s = G / 2; s >= 32; s >>= 1) {{
      if (lane < s)
        sm[t] = cuplug_reduce(sm[t], sm[t + s]);
      __syncthreads();
    }}
  }} else {{
    __syncwarp();
  }}
  if (lane < 32) {{
#pragma unroll
    for (unsigned s = 16; s > 0; s >>= 1) {{
      if (lane < s)
        sm[t] = cuplug_reduce(sm[t], sm[t + s]);
      __syncwarp();
    }}
  }}
  if (lane == 0)
    cuplug_store(p, g, oo, sm[t]);
}}
"""

# Columns: thread t = split * ceil(m / V) + c owns outputs c*V .. c*V+V-1 of its split, which
# lie in one run of the innermost kept dimension (the caller makes its length a multiple of V).
_COLS = """\
extern "C" __global__ void __launch_bounds__(CUPLUG_BLOCK) {entry}(const cuplug_params p)
{{
  typedef {src} T;
  constexpr int V = {vec};
  const unsigned W = p.group;  // outputs per thread, V or a divisor of it
  const unsigned long long t = (unsigned long long)blockIdx.x * CUPLUG_BLOCK + threadIdx.x;
  const unsigned long long per = (p.m + W - 1) / W;
  if (t >= per * p.splits)
    return;
  const unsigned long long split = p.splits == 1 ? 0 : t / per;
  const unsigned long long c = t - split * per;
  const unsigned long long r0 = split * p.chunk;
  const unsigned long long r1 = p.chunk < p.n - r0 ? r0 + p.chunk : p.n;
  long long io, oo;
  cuplug_offsets(c * W, p, io, oo);
  const long long is = p.nd > 0 ? p.in_s[p.nd - 1] : 0;
  const T *col = static_cast<const T *>(p.in) + io;
  acc_type acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k)
    acc[k] = {neutral};
  unsigned long long r = r0;
  if (V > 1 && p.vec) {{  // W == V values of a row, consecutive in memory and aligned
    for (; r + COLS_UNROLL <= r1; r += COLS_UNROLL) {{
      cuplug_vec<T, V> w[COLS_UNROLL];
#pragma unroll
      for (int u = 0; u < COLS_UNROLL; ++u)
        w[u] = *reinterpret_cast<const cuplug_vec<T, V> *>(col + (long long)(r + u) * p.s_red);
#pragma unroll
      for (int u = 0; u < COLS_UNROLL; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k)
          acc[k] = cuplug_reduce(acc[k], {get}(w[u][k], (long long)(r + u)));
    }}
  }}
  const int live = c * W + W <= p.m ? (int)W : (int)(p.m - c * W);
  for (; r < r1; ++r) {{
    T v[V];
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (k < live)
        v[k] = col[(long long)r * p.s_red + k * is];
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (k < live)
        acc[k] = cuplug_reduce(acc[k], {get}(v[k], (long long)r));
  }}
  const unsigned long long base = split * p.m + c * W;
  const long long os = p.nd > 0 ? p.out_s[p.nd - 1] : 0;
#pragma unroll
  for (int k = 0; k < V; ++k)
    if (k < live)
      cuplug_store(p, base + k, oo + k * os, acc[k]);
}}
"""


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
    source += _COMMON.format(
        maxd=MAXD,
        block=BLOCK,
        unroll=UNROLL,
        cols_unroll=COLS_UNROLL,
        reduce_expr=sp.reduce_expr,
        final_expr=sp.final_expr,
    )
    if any(not e.endswith("a") for e in entries):
        source += _MAP.format(map_expr=sp.map_expr)
    for kind in entries:
        if kind not in ENTRIES:
            raise ValueError(f"unknown entry kind {kind!r}; known: {', '.join(ENTRIES)}")
        from_acc = kind.endswith("a")
        base = kind.rstrip("a")
        size = sp.acc_size if from_acc else sp.in_dtype.itemsize
        template = _ROWS if base == "rows" else _COLS
        source += template.format(
            entry=entry(sp.name, kind),
            src="acc_type" if from_acc else "in_type",
            vec=vector_width(size, base),
            neutral=sp.neutral,
            get="cuplug_same" if from_acc else "cuplug_map",
        )
    return source
