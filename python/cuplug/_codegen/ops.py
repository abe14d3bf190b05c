"""THE operation table: every elementwise operation arrays compute - the operators (``x ** y``,
``abs(x)``, ``x < y``), the NumPy routines of cuplug.gpuarray (``maximum``, ``where``, ``clip``)
and the functions of cuplug.cumath (``sin``, ``fmod``, ``frexp``) - one row each, so that one
operation has one kernel whichever way it is spelled (``x ** y`` and ``cumath.power(x, y)``
resolve the same row, the same loop dtypes and the same source).

A row (:class:`Op`) holds the name, the NumPy ufunc whose loops decide the dtypes, and the C
expression per kind of loop: either a builder from op_exprs.py (operators, whose expressions
depend on both operands' dtypes) or one expression per kind (``real``, ``complex``,
``integer``) over the operands ``a`` and ``b`` in the loop's compute type, with ``R`` the
loop's real type and ``C`` its complex type (math functions). PyCUDA's cumath quirks are data
of the rows: ``complex_out`` (fabs/ceil/floor of complex, which NumPy lacks), ``int_args``
(ldexp's float exponents truncated), ``aliases`` (``asin`` and ``arcsin``), ``cumath``.

:func:`plan` resolves an operation over operand dtypes (NumPy's loops, the result dtypes,
out= checks); :func:`operation` writes the kernel's statement and preamble. Pure: the array
layer (cuplug._array.math) turns a plan into a kernel, once per dtype combination.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from cuplug import _dtypes

from . import op_exprs as ex
from .casts import cast, compute_type, load, real_ctype, store
from .device_helpers import guarded

__all__ = ["OPS", "Op", "Plan", "cumath_rows", "lookup", "operation", "plan"]

# Constants the expressions use, spelled out: NVRTC has no M_PI without <math.h>.
_LN2 = "R(0.693147180559945309417232121458176568)"
_LOG2E = "R(1.44269504088896340735992468100189214)"
_DEG = "R(57.2957795130823208767981548141051703)"
_RAD = "R(0.0174532925199432957692369076848861271)"

_KINDS = {"c": "complex", "f": "real"}  # every other dtype kind computes in "integer"


@dataclass(frozen=True)
class Op:
    """One elementwise operation. ``build``: the expression builder (operators); else ``real``
    / ``complex`` / ``integer``: the C expression for that kind of loop (None: the kind is
    refused with a TypeError), for two outputs statements assigning ``r0`` and ``r1``.
    ``complex_out``: the result when NumPy has no complex loop but ``complex`` is given
    ("same" dtype or its "real" part). ``int_args``: operand positions truncated to int when
    given floats. ``cumath``: a function of cuplug.cumath (under its name and aliases)."""

    name: str
    ufunc: np.ufunc
    build: Callable | None = None
    real: str | None = None
    complex: str | None = None
    integer: str | None = None
    complex_out: str | None = None
    int_args: tuple = ()
    aliases: tuple = ()
    cumath: bool = False

    @property
    def numpy(self) -> str:
        """The NumPy ufunc's name."""
        return self.ufunc.__name__

    @property
    def nin(self) -> int:
        """How many operands it takes."""
        return self.ufunc.nin

    @property
    def nout(self) -> int:
        """How many arrays it returns."""
        return self.ufunc.nout

    def expression(self, loop_kind: str) -> str | None:
        """The row's C expression for one kind of loop (None for builder rows and refused kinds).

        Parameters
        ----------
        loop_kind : str
            "real", "complex" or "integer" (every loop that is neither float nor complex).

        Returns
        -------
        str | None
            The expression over ``a``, ``b``, ``R`` and ``C``.
        """
        return getattr(self, loop_kind)


def _um(name):
    um = getattr(np, "_core", None) or np.core
    return getattr(um.umath, name)


def _o(name, ufunc, build, cumath=False):
    return Op(name, ufunc, build=build, cumath=cumath)


def _m(name, ufunc, real, complex=None, integer=None, complex_out=None, **more):
    return Op(name, ufunc, None, real, complex, integer, complex_out, cumath=True, **more)


#: Every row; aliases share their row.
TABLE = (
    # The operators and NumPy routines of gpuarray.
    _o("add", np.add, ex.arith("+", "||")),
    _o("subtract", np.subtract, ex.arith("-")),
    _o("multiply", np.multiply, ex.arith("*", "&&")),
    _o("true_divide", np.true_divide, ex.arith("/")),
    _o("floor_divide", np.floor_divide, ex.floordiv),
    _o("remainder", np.remainder, ex.mod),
    _o("power", np.power, ex.power, cumath=True),
    _o("bitwise_and", np.bitwise_and, ex.bitwise("&", "&&")),
    _o("bitwise_or", np.bitwise_or, ex.bitwise("|", "||")),
    _o("bitwise_xor", np.bitwise_xor, ex.bitwise("^", "!=")),
    _o("left_shift", np.left_shift, ex.shift("cuplug_lshift")),
    _o("right_shift", np.right_shift, ex.shift("cuplug_rshift")),
    _o("equal", np.equal, ex.compare("==")),
    _o("not_equal", np.not_equal, ex.compare("!=")),
    _o("less", np.less, ex.compare("<")),
    _o("less_equal", np.less_equal, ex.compare("<=")),
    _o("greater", np.greater, ex.compare(">")),
    _o("greater_equal", np.greater_equal, ex.compare(">=")),
    _o("maximum", np.maximum, ex.extremum("max")),
    _o("minimum", np.minimum, ex.extremum("min")),
    _o("fmax", np.fmax, ex.fextremum("fmax"), cumath=True),
    _o("fmin", np.fmin, ex.fextremum("fmin"), cumath=True),
    _o("logical_and", np.logical_and, ex.logical("&&")),
    _o("logical_or", np.logical_or, ex.logical("||")),
    _o("logical_xor", np.logical_xor, ex.logical("!=")),
    _o("logical_not", np.logical_not, ex.logical_not),
    _o("negative", np.negative, ex.negative),
    _o("positive", np.positive, ex.copy),
    _o("absolute", np.absolute, ex.absolute),
    _o("invert", np.invert, ex.invert),
    _o("sign", np.sign, ex.sign),
    _o("isnan", np.isnan, ex.isnan),
    _o("isinf", np.isinf, ex.isinf),
    _o("isfinite", np.isfinite, ex.isfinite),
    _o("rint", np.rint, ex.rint, cumath=True),
    _o("conjugate", np.conjugate, ex.conjugate),
    _o("clip", _um("clip"), ex.clip),
    # PyCUDA's cumath (spec section 7), with NumPy's names as aliases.
    _m("fabs", np.fabs, "fabs(a)", "cuda::std::abs(a)", complex_out="real"),
    _m("ceil", np.ceil, "ceil(a)", "C(ceil(a.real()), ceil(a.imag()))", "a", "same"),
    _m("floor", np.floor, "floor(a)", "C(floor(a.real()), floor(a.imag()))", "a", "same"),
    _m("exp", np.exp, "exp(a)", "cuda::std::exp(a)"),
    _m("log", np.log, "log(a)", "cuda::std::log(a)"),
    _m("log10", np.log10, "log10(a)", "cuda::std::log10(a)"),
    _m("sqrt", np.sqrt, "sqrt(a)", "cuda::std::sqrt(a)"),
    _m("sin", np.sin, "sin(a)", "cuda::std::sin(a)"),
    _m("cos", np.cos, "cos(a)", "cuda::std::cos(a)"),
    _m("tan", np.tan, "tan(a)", "cuda::std::tan(a)"),
    _m("asin", np.arcsin, "asin(a)", "cuda::std::asin(a)", aliases=("arcsin",)),
    _m("acos", np.arccos, "acos(a)", "cuda::std::acos(a)", aliases=("arccos",)),
    _m("atan", np.arctan, "atan(a)", "cuda::std::atan(a)", aliases=("arctan",)),
    _m("sinh", np.sinh, "sinh(a)", "cuda::std::sinh(a)"),
    _m("cosh", np.cosh, "cosh(a)", "cuda::std::cosh(a)"),
    _m("tanh", np.tanh, "tanh(a)", "cuda::std::tanh(a)"),
    _m("fmod", np.fmod, "fmod(a, b)", None, "(b == 0 ? 0 : a % b)"),
    _m("frexp", np.frexp, "int e; r0 = frexp(a, &e); r1 = e;"),
    _m("ldexp", np.ldexp, "ldexp(a, int(b))", int_args=(1,)),
    _m("modf", np.modf, "R ip; r0 = modf(a, &ip); r1 = ip;"),
    # NumPy's other math ufuncs.
    _m("asinh", np.arcsinh, "asinh(a)", "cuda::std::asinh(a)", aliases=("arcsinh",)),
    _m("acosh", np.arccosh, "acosh(a)", "cuda::std::acosh(a)", aliases=("arccosh",)),
    _m("atanh", np.arctanh, "atanh(a)", "cuda::std::atanh(a)", aliases=("arctanh",)),
    _m("exp2", np.exp2, "exp2(a)", f"cuda::std::exp(a * {_LN2})"),
    _m(
        "expm1",
        np.expm1,
        "expm1(a)",
        # exp(x)(cos y + i sin y) - 1 without losing the small real part: cos y - 1 = -2 sin²(y/2)
        "C(expm1(a.real()) * cos(a.imag()) - R(2) * sin(a.imag() / 2) * sin(a.imag() / 2), "
        "exp(a.real()) * sin(a.imag()))",
    ),
    _m("log2", np.log2, "log2(a)", f"cuda::std::log(a) * {_LOG2E}"),
    _m(
        "log1p",
        np.log1p,
        "log1p(a)",
        # log|1+z| = log1p(2x + x² + y²) / 2, exact for small z
        "C(R(0.5) * log1p(a.real() * (R(2) + a.real()) + a.imag() * a.imag()), "
        "atan2(a.imag(), R(1) + a.real()))",
    ),
    _m("cbrt", np.cbrt, "cbrt(a)"),
    _m("square", np.square, "a * a", "a * a", "a * a"),
    _m("trunc", np.trunc, "trunc(a)", None, "a"),
    _m("deg2rad", np.deg2rad, f"a * {_RAD}", aliases=("radians",)),
    _m("rad2deg", np.rad2deg, f"a * {_DEG}", aliases=("degrees",)),
    _m("atan2", np.arctan2, "atan2(a, b)", aliases=("arctan2",)),
    _m("hypot", np.hypot, "hypot(a, b)"),
    _m("copysign", np.copysign, "copysign(a, b)"),
    _m(
        "logaddexp",
        np.logaddexp,
        f"(a == b ? a + {_LN2} : (a > b ? a : b) + log1p(exp(-fabs(a - b))))",
    ),
    _m(
        "logaddexp2",
        np.logaddexp2,
        f"(a == b ? a + R(1) : (a > b ? a : b) + log1p(exp2(-fabs(a - b))) * {_LOG2E})",
    ),
)

#: name -> row, for the rows' names (aliases resolve through :func:`lookup`).
OPS = {row.name: row for row in TABLE}
_BY_NAME = {n: row for row in TABLE for n in (row.name, *row.aliases)}
# Names with their own statements (not ufuncs): casts between arrays, fill, where.
_SPECIAL = ("_copy", "_fill", "where")


def lookup(name: str) -> Op:
    """The row of operation `name` (either spelling); TypeError for an unknown name."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise TypeError(f"unknown elementwise operation {name!r}") from None


def cumath_rows() -> tuple:
    """The rows cuplug.cumath exports, in the table's order."""
    return tuple(row for row in TABLE if row.cumath)


# ---- dtypes: NumPy's loops and the result ----------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """An operation resolved over operand dtypes: the row (None for _copy/_fill/where), NumPy's
    loop dtypes (``loop_in`` per operand, ``loop_out`` per output) and the dtypes the results
    are stored in (``results``: out='s dtypes where given)."""

    row: Op | None
    loop_in: tuple
    loop_out: tuple
    results: tuple


def _dtype_of(x):
    if isinstance(x, np.dtype):
        return x
    dtype = getattr(x, "dtype", None)
    return None if dtype is None else np.dtype(dtype)


def _describe(x) -> str:
    dt = _dtype_of(x)
    return str(dt) if dt is not None else f"Python {getattr(x, '__name__', type(x).__name__)}"


def _unsupported(row: Op, types) -> str:
    kinds = [k for k in ("real", "complex", "integer") if row.expression(k) is not None]
    return (
        f"cumath.{row.name} is not defined for {', '.join(_describe(x) for x in types)}: "
        f"it takes {' and '.join(kinds)} dtypes (as numpy.{row.numpy} does)"
    )


def _check_supported(name, dtypes):
    for dt in dtypes:
        if isinstance(dt, np.dtype):
            try:
                _dtypes.code_of(dt)
            except TypeError as e:
                raise TypeError(f"{name}: {e}") from None


def loops(row: Op, types) -> tuple[tuple, tuple]:
    """(input loop dtypes, output loop dtypes) of `row` over operand types (dtypes, or Python
    types for weak scalars): NumPy's own choice; for the complex cases NumPy lacks (fabs, ceil,
    floor) complex in and ``complex_out`` out; int_args operands of float dtype as int32."""
    types = list(types)
    if len(types) != row.nin:
        raise TypeError(f"{row.name} takes {row.nin} operands, got {len(types)}")
    ops = list(types)
    for k in row.int_args:
        if isinstance(ops[k], np.dtype) and ops[k].kind == "f":
            ops[k] = np.dtype(np.int32)
        elif ops[k] is float or isinstance(ops[k], float):
            ops[k] = int
    try:
        loop = _dtypes.resolve_ufunc(row.ufunc, ops, nout=row.nout)
    except TypeError as e:
        if row.build is not None:
            raise
        dts = [_dtype_of(x) for x in ops]
        if row.complex_out and any(d is not None and d.kind == "c" for d in dts):
            c = _dtypes.result_type(*ops)
            out = c if row.complex_out == "same" else np.dtype(c.char.lower())
            return (c,) * row.nin, (out,)
        raise TypeError(_unsupported(row, types)) from e
    ins, outs = tuple(loop[: row.nin]), tuple(loop[row.nin :])
    if row.build is None and row.expression(_KINDS.get(ins[0].kind, "integer")) is None:
        raise TypeError(_unsupported(row, types))
    return ins, outs


def plan(name: str, types, out_dtypes=None) -> Plan:
    """Resolves operation `name` over operand types (np.dtype, or a Python type for a weak
    scalar) into results of ``out_dtypes`` (None: NumPy's result dtypes; else one dtype or
    None per output). TypeError for dtypes or combinations NumPy (or arrays) do not support,
    and for results out= cannot hold under NumPy's same_kind rule."""
    row = None if name in _SPECIAL else lookup(name)
    if out_dtypes is None or not isinstance(out_dtypes, tuple):
        out_dtypes = (out_dtypes,)
    given = [np.dtype(d) for d in out_dtypes if d is not None]
    _check_supported(name, list(types) + given)
    if name in ("_copy", "_fill"):
        src = types[0] if isinstance(types[0], np.dtype) else None
        result = out_dtypes[0] if out_dtypes[0] is not None else src
        if result is None:
            raise TypeError(f"{name}: needs out= for a scalar")
        result = np.dtype(result)
        return Plan(None, (result if src is None else src,), (result,), (result,))
    if name == "where":
        res = _dtypes.result_type(*types[1:])
        loop_in, loop_out = (np.dtype(np.bool_), res, res), (res,)
    else:
        loop_in, loop_out = loops(row, types)
    _check_supported(name, [np.dtype(d) for d in (*loop_in, *loop_out)])
    if len(out_dtypes) != len(loop_out) and not (len(out_dtypes) == 1 and out_dtypes[0] is None):
        raise ValueError(f"{name} has {len(loop_out)} outputs, out= gives {len(out_dtypes)}")
    results = []
    for k, lo in enumerate(loop_out):
        want = out_dtypes[k] if k < len(out_dtypes) else None
        if want is None:
            results.append(np.dtype(lo))
            continue
        want = np.dtype(want)
        if not np.can_cast(lo, want, "same_kind"):
            which = f"output {k}" if len(loop_out) > 1 else "output"
            # NumPy's UFuncTypeError text.
            raise TypeError(
                f"Cannot cast ufunc '{name}' {which} from {np.dtype(lo)!r} to {want!r} "
                "with casting rule 'same_kind'"
            )
        results.append(want)
    return Plan(row, tuple(map(np.dtype, loop_in)), tuple(map(np.dtype, loop_out)), tuple(results))


# ---- source ------------------------------------------------------------------------------------


def _inputs(operand_dtypes, scalar, loop_in):
    return [
        load(f"s{k}" if scalar[k] else f"x{k}[i]", operand_dtypes[k], loop_in[k])
        for k in range(len(loop_in))
    ]


def _outputs(n):
    return ["z"] if n == 1 else [f"z{k}" for k in range(n)]


def operation(name, operand_dtypes, scalar, loop_in, loop_out, out_dtypes):
    """(statement, preamble) computing ``name`` for one element ``i``.

    operand_dtypes: the dtype each input arrives in (an array's own dtype; for scalars the loop
    dtype, since they are converted on the host); scalar: per input, True when it is passed by
    value (named ``s<k>`` instead of ``x<k>[i]``); loop_in / loop_out: NumPy's loop dtypes
    (loop_out one per output); out_dtypes: the output arrays' dtypes (they differ from
    loop_out for out= and in-place). Outputs are named ``z`` (one) or ``z0``, ``z1``."""
    loop_out, out_dtypes = tuple(loop_out), tuple(out_dtypes)
    if name in ("_copy", "_fill"):
        src = "s0" if scalar[0] else "x0[i]"
        return f"z[i] = {cast(src, operand_dtypes[0], out_dtypes[0])};", ""
    if name == "where":
        c = "s0" if scalar[0] else "x0[i]"
        vals = _inputs(operand_dtypes, scalar, (None, loop_out[0], loop_out[0]))[1:]
        cond = cast(c, operand_dtypes[0], np.bool_)
        expr = f"({cond} ? {vals[0]} : {vals[1]})"
        return f"z[i] = {store(expr, loop_out[0], out_dtypes[0])};", ""
    row = lookup(name)
    xs = _inputs(operand_dtypes, scalar, loop_in)
    if row.build is not None:
        expr, helpers = row.build(xs, [np.dtype(d) for d in loop_in], np.dtype(loop_out[0]))
        pre = "".join(guarded(h) for h in helpers)
        return f"z[i] = {store(expr, loop_out[0], out_dtypes[0])};", pre
    return _math_statement(row, xs, loop_in, loop_out, out_dtypes), ""


def _math_statement(row: Op, xs, loop_in, loop_out, out_dtypes):
    """A block binding the operands to ``a`` and ``b`` (and ``R``, ``C`` to the loop's real and
    complex types) around the row's expression for the loop's kind."""
    first = np.dtype(loop_in[0])
    loop_kind = _KINDS.get(first.kind, "integer")
    expr = row.expression(loop_kind)
    parts = [f"typedef {real_ctype(first)} R;"]
    if loop_kind == "complex":
        parts.append("typedef cuda::std::complex<R> C;")
    for k, (x, li) in enumerate(zip(xs, loop_in)):
        parts.append(f"const {compute_type(li)} {'ab'[k]} = {x};")
    outs = _outputs(len(loop_out))
    if len(loop_out) == 1:
        parts.append(f"{outs[0]}[i] = {store(expr, loop_out[0], out_dtypes[0])};")
    else:
        parts += [f"{compute_type(lo)} r{k};" for k, lo in enumerate(loop_out)]
        parts.append(expr)
        parts += [
            f"{z}[i] = {store(f'r{k}', lo, od)};"
            for k, (z, lo, od) in enumerate(zip(outs, loop_out, out_dtypes))
        ]
    return "{ " + " ".join(parts) + " }"
