"""NumPy's reductions over axes, the pure half (no device): the arguments as NumPy reads them
(axis, keepdims, dtype, out; result dtypes asked of NumPy itself) and the plan of launches that
reduces a layout (CI checks it on a host emulator, tests/python/array/reduction_emulator.py).
cuplug._kernels.axis_reduction runs the plans."""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from cuplug._codegen import axis_reduction as _ar
from cuplug._kernels import tuning as _tuning

try:
    from numpy.exceptions import AxisError
except ImportError:  # pragma: no cover - NumPy 1.x
    AxisError = np.AxisError

__all__ = [
    "AxisError",
    "Launch",
    "TooManyDims",
    "normalize_axis",
    "plan_launches",
    "resolve_dtypes",
    "result_shape",
]

#: Reductions that raise on an empty slice (no identity), with NumPy's operation name.
_NO_IDENTITY = {
    "min": "minimum",
    "max": "maximum",
    "nanmin": "fmin",
    "nanmax": "fmax",
    "argmin": None,
    "argmax": None,
}
#: Reductions that take dtype=, NumPy's signature.
_TAKES_DTYPE = frozenset(
    ("sum", "prod", "nansum", "nanprod", "mean", "nanmean", "var", "std", "nanvar", "nanstd")
)
_ARG = frozenset(("argmin", "argmax"))
_MOMENTS = frozenset(("var", "std", "nanvar", "nanstd"))


# ---- argument resolution (pure) -----------------------------------------------------------------


def normalize_axis(axis, ndim, kind="sum"):
    """The reduced axes as a sorted tuple, as NumPy reads ``axis``: None (all), an int or a
    tuple of ints, negative ones counted from the end. AxisError when out of range, ValueError
    for a repeated axis, TypeError for anything else. argmin/argmax take None or one int."""
    if axis is None:
        return tuple(range(ndim))
    if kind in _ARG and isinstance(axis, (tuple, list)):
        raise TypeError(f"{kind}: axis must be None or an int, got {type(axis).__name__}")
    single = not isinstance(axis, (tuple, list))
    items = (axis,) if single else axis
    out = []
    for item in items:
        try:
            k = operator.index(item)
        except TypeError:
            raise TypeError(
                f"{kind}: axis must be None, an int or a tuple of ints, got "
                f"{type(item).__name__} {item!r}"
            ) from None
        if ndim == 0 and single and k in (0, -1) and kind not in ("mean", "var", "std"):
            # NumPy lets a 0-d array be reduced over axis=0 / axis=-1, except in mean, var and
            # std, which count the reduced items first (numpy 2.4; nanmean and friends allow it).
            continue
        if not -ndim <= k < ndim:
            raise AxisError(k, ndim)
        out.append(k % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def result_shape(shape, axes, keepdims):
    """The result's shape: the kept axes (the reduced ones as 1 with keepdims)."""
    if keepdims:
        return tuple(1 if k in axes else n for k, n in enumerate(shape))
    return tuple(n for k, n in enumerate(shape) if k not in axes)


_DTYPES = {}


def _numpy_call(kind, x, dtype, out=None):
    fn = getattr(np, kind)
    kwargs = {"axis": 0}
    if dtype is not None:
        kwargs["dtype"] = dtype
    if out is not None:
        kwargs["out"] = out
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        result = np.asarray(fn(x, **kwargs))
    complex_warning = any(issubclass(w.category, _ComplexWarning) for w in caught)
    return result, complex_warning


_ComplexWarning = getattr(np, "exceptions", np).ComplexWarning


def resolve_dtypes(kind, in_dtype, dtype=None, out_dtype=None):
    """(compute dtype, result dtype) of reduction ``kind`` over ``in_dtype`` elements with
    NumPy's ``dtype=`` argument: NumPy's own answer (it reduces a small host array), so integer
    sums promote, means of integers are float64 and so on exactly as there. With ``out_dtype``,
    NumPy must accept storing the result there (TypeError otherwise; a ComplexWarning when the
    imaginary part is dropped, as NumPy warns)."""
    key = (kind, in_dtype, dtype, out_dtype)
    hit = _DTYPES.get(key)
    if hit is not None:
        return hit
    in_dtype = np.dtype(in_dtype)
    if in_dtype.kind not in "biufc":
        raise TypeError(f"{kind}: not defined for dtype {in_dtype}")
    if dtype is not None and kind not in _TAKES_DTYPE:
        raise TypeError(f"{kind}() got an unexpected keyword argument 'dtype'")
    if in_dtype.kind == "c" and kind in _NO_IDENTITY:
        raise TypeError(
            f"{kind}: not defined for complex dtype {in_dtype} (real numbers and integers only)"
        )
    # An array result (NumPy casts 0-d results more loosely than arrays).
    host = np.ones((1, 2), in_dtype)
    try:
        result = _numpy_call(kind, host, dtype)[0].dtype
    except TypeError as e:
        raise TypeError(
            f"{kind}: NumPy refuses dtype={dtype!r} for {in_dtype} input: {e}"
        ) from None
    if result.kind not in "biufc":
        raise TypeError(f"{kind}: dtype={dtype!r} gives a {result} result, which arrays lack")
    if kind in _MOMENTS:
        compute = np.dtype(dtype) if dtype is not None else None
        if compute is None:
            compute = np.dtype(np.float64) if in_dtype.kind in "biu" else in_dtype
    elif kind in _TAKES_DTYPE:
        compute = result
    else:
        compute = in_dtype
    if out_dtype is not None:
        out_dtype = np.dtype(out_dtype)
        if out_dtype.kind not in "biufc":
            raise TypeError(f"{kind}: out= of dtype {out_dtype} is not supported by arrays")
        try:
            _, dropped = _numpy_call(kind, host, dtype, np.empty((2,), out_dtype))
        except TypeError as e:
            raise TypeError(
                f"{kind}: cannot store its {result} result in out= of dtype {out_dtype} "
                f"(NumPy's casting rule): {e}"
            ) from None
        if dropped:
            warnings.warn(
                f"{kind}: out= of dtype {out_dtype} keeps the real part of the {result} result",
                _ComplexWarning,
                stacklevel=4,
            )
    hit = _DTYPES[key] = (compute, result)
    return hit


# ---- planning (pure) ---------------------------------------------------------------------------

#: Threads that fill a GPU, per SM (splits are chosen to reach this; CUPLUG_REDUCE_THREADS
#: overrides it for experiments on a GPU; a value it does not accept is named in a warning and
#: ignored, see cuplug._kernels.tuning).
THREADS_PER_SM = _tuning.integer("CUPLUG_REDUCE_THREADS", 2048, _tuning.between(32, 65536))


class TooManyDims(Exception):
    """A layout whose kept dimensions do not fit one launch (MAXD): reduce a compact copy."""


class Launch:
    """One kernel launch of a plan: entry ``kind`` ("rows", "cols", "rowsa", "colsa"), ``grid``
    blocks, reading buffer ``src`` at element ``src_off`` and writing ``dst`` at ``dst_off``
    (buffers: "in", "out" or a temporary's index), with ``fields``: the parameter block after
    its two pointers, as a tuple in PARAMS order (m, n, s_red, chunk, splits, denom, nd, final,
    vec, group, shape..., in_strides..., out_strides...)."""

    __slots__ = ("kind", "grid", "src", "src_off", "dst", "dst_off", "fields", "fn", "tail")

    def __init__(self, kind, grid, src, src_off, dst, dst_off, fields):
        self.kind = kind
        self.grid = grid
        self.src = src
        self.src_off = src_off
        self.dst = dst
        self.dst_off = dst_off
        self.fields = fields
        self.fn = None
        self.tail = None

    @property
    def params(self):
        """The fields by name (for tests and debugging)."""
        names = ("m", "n", "s_red", "chunk", "splits", "denom", "nd", "final", "vec", "group")
        d = dict(zip(names, self.fields))
        nd = d["nd"]
        maxd = _ar.MAXD
        d["shape"] = self.fields[10 : 10 + nd]
        d["in_s"] = self.fields[10 + maxd : 10 + maxd + nd]
        d["out_s"] = self.fields[10 + 2 * maxd : 10 + 2 * maxd + nd]
        return d

    def __repr__(self):
        return f"Launch({self.kind}, grid={self.grid}, {self.src}->{self.dst}, {self.params})"


def _ceil(a, b):
    return -(-a // b)


def _merge(dims, with_out):
    """Adjacent dims (outer first) that step as one are merged: [n, s_in(, s_out)]."""
    out = []
    for d in dims:
        if out:
            p = out[-1]
            if p[1] == d[1] * d[0] and (not with_out or p[2] == d[2] * d[0]):
                out[-1] = [p[0] * d[0], *d[1:]]
                continue
        out.append(list(d))
    return out


def _compact(dims):
    """C-order strides (elements) of dims, outer first."""
    strides, s = [], 1
    for d in reversed(dims):
        strides.append(s)
        s *= d[0]
    return strides[::-1]


class _Planner:
    def __init__(self, acc_size, sms, ptr_mod, denom):
        self.acc_size = acc_size
        self.threads = sms * THREADS_PER_SM
        self.sms = sms
        self.ptr_mod = ptr_mod
        self.denom = float(denom)
        self.launches = []
        self.temps = []

    def temp(self, elements):
        self.temps.append(max(1, elements) * self.acc_size)
        return len(self.temps) - 1

    def emit(self, dims, n, s, src, src_off, item, acc, dst, dst_off, final, split_ok=True):
        """Launches reducing dim (n, s) of src for every output of dims ([n, s_in, s_out])."""
        if len(dims) > _ar.MAXD:
            raise TooManyDims
        m = math.prod(d[0] for d in dims)
        ins = [d[1] for d in dims]
        min_ks = min((abs(x) for x in ins), default=None)
        aligned = src != "in" or (self.ptr_mod + src_off * item) % 16 == 0
        if m == 1 or (n >= 16 and min_ks is not None and abs(s) < min_ks):
            kind = "rows"
            v = _ar.vector_width(item, "rows")
            g = 256 if (n > 1024 or m < 8 * self.sms) else 32
            splits = 1
            if split_ok:
                splits = max(1, min(_ceil(_ceil(self.threads, g), m), n // (g * v * 4)))
            chunk = _ceil(_ceil(max(n, 1), splits), g * v) * g * v
            splits = max(1, _ceil(n, chunk))
            vec = v > 1 and s == 1 and aligned and all(x % v == 0 for x in ins)
            vec = vec and (self.ptr_mod + src_off * item) % (v * item) == 0
            grid = _ceil(m * splits * g, _ar.BLOCK)
        else:
            kind = "cols"
            v = _ar.vector_width(item, "cols")
            inner = dims[-1][0] if dims else 1
            g = v
            while inner % g:
                g //= 2
            per = _ceil(m, g)
            splits = 1
            if split_ok:
                # Half the threads of rows: a column thread needs 50-70 registers (4 SMs' worth
                # of blocks fit), and keeps 64 bytes of loads in flight.
                splits = max(1, min(_ceil(self.threads // 2, per), n // 32))
            chunk = _ceil(max(n, 1), splits)
            splits = max(1, _ceil(n, chunk))
            vec = g == v > 1 and dims[-1][1] == 1 and s % v == 0 and aligned
            vec = vec and all(x % v == 0 for x in ins[:-1])
            vec = vec and (self.ptr_mod + src_off * item) % (v * item) == 0
            grid = _ceil(per * splits, _ar.BLOCK)
        if acc:
            kind += "a"
        nd = len(dims)
        pad = [0] * (_ar.MAXD - nd)
        shape = [d[0] for d in dims] + pad
        outs = [d[2] for d in dims] + pad

        def fields(m_, n_, s_, chunk_, splits_, final_, vec_, ins_):
            return (m_, n_, s_, chunk_, splits_, self.denom, nd, int(final_), int(vec_), g,
                    *shape, *(list(ins_) + pad), *outs)  # fmt: skip

        if splits == 1:
            self.launches.append(
                Launch(kind, grid, src, src_off, dst, dst_off,
                       fields(m, n, s, chunk, 1, final, vec, ins))
            )  # fmt: skip
            return
        partial = self.temp(splits * m)
        self.launches.append(
            Launch(kind, grid, src, src_off, partial, 0,
                   fields(m, n, s, chunk, splits, False, vec, ins))
        )  # fmt: skip
        # The partial values [split][m] reduced over split, into dst.
        combined = [[d[0], c, d[2]] for d, c in zip(dims, _compact(dims))]
        self.emit(combined, splits, m, partial, 0, self.acc_size, True, dst, dst_off, final, False)


def plan_launches(shape, strides, axes, itemsize, acc_size, out_strides, sms, ptr_mod=0,
                  ordered=False, denom=0.0):  # fmt: skip
    """The launches (list of :class:`Launch`) and temporaries (bytes each) that reduce
    ``axes`` of an array of ``shape`` and ``strides`` (elements), writing output element of
    kept index ``k`` at ``sum(k_j * out_strides[j])`` (elements, one per kept axis in order).
    ``ptr_mod``: the input's address modulo 16; ``ordered``: the index along the reduced axis
    is part of the result (argmin/argmax: reduced axes are not reversed). Returns (launches,
    temps, in_off, out_off): in_off/out_off are the element offsets the launches start from in
    the input and the output (reversed axes move them; the launches' offsets include them)."""
    kept, red = [], []
    in_off = out_off = 0
    empty_reduction = False
    it = iter(out_strides)
    for k, (n, s) in enumerate(zip(shape, strides)):
        if k in axes:
            if n == 0:
                empty_reduction = True
            elif n != 1:
                if s < 0 and not ordered:
                    in_off += (n - 1) * s
                    s = -s
                red.append([n, s])
        else:
            os_ = next(it)
            if n == 0:
                return [], [], 0, 0
            if n != 1:
                if s < 0:  # reversed kept axes: walk them forwards, in and out alike
                    in_off += (n - 1) * s
                    out_off += (n - 1) * os_
                    s, os_ = -s, -os_
                kept.append([n, s, os_])
    kept = _merge(sorted(kept, key=lambda d: -abs(d[1])), True)
    red = _merge(sorted(red, key=lambda d: -abs(d[1])), False)
    if empty_reduction:
        red = [[0, 0]]
    elif not red:
        red = [[1, 0]]  # axis=() or only length-1 axes: each output is one element
    if ordered and len(red) > 1:
        raise ValueError("argmin/argmax reduce one axis (or a C-contiguous array's all)")
    if len(kept) + len(red) - 1 > _ar.MAXD:
        raise TooManyDims
    p = _Planner(acc_size, sms, ptr_mod, denom)
    src, src_off, item, acc = "in", in_off, itemsize, False
    while True:
        n, s = red.pop()  # the innermost reduced dimension first
        if not red:
            p.emit(kept, n, s, src, src_off, item, acc, "out", out_off, True)
            break
        # The other reduced dimensions stay for later launches: kept here, in a temporary.
        dims = sorted(
            [[d[0], d[1], 0, "k", d[2]] for d in kept] + [[d[0], d[1], 0, "r", 0] for d in red],
            key=lambda d: -abs(d[1]),
        )
        tmp = p.temp(math.prod(d[0] for d in dims))
        p.emit([d[:3] for d in dims], n, s, src, src_off, item, acc, tmp, 0, False)
        strides = _compact(dims)
        kept = _merge([[d[0], c, d[4]] for d, c in zip(dims, strides) if d[3] == "k"], True)
        red = _merge([[d[0], c] for d, c in zip(dims, strides) if d[3] == "r"], False)
        src, src_off, item, acc = tmp, 0, acc_size, True
    return p.launches, p.temps, in_off, out_off
