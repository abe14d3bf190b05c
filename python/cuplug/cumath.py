"""Elementwise math on GPUArrays (``pycuda.cumath``), for every float and complex dtype.

Each function is one row of :data:`FUNCTIONS`: its name, the NumPy ufunc whose loops decide the
result dtypes (so ``sin(int8)`` is float16 and ``sin(int32)`` float64, as in NumPy), and one C
expression per kind of loop (real float, complex, integer) over the operands ``a`` and ``b``,
which arrive converted to the loop's compute type (``float`` for float16 and float32,
``double`` for float64, ``cuda::std::complex<...>`` for complex). Inside the expressions ``R``
is the loop's real type and ``C`` its complex type.

Every function takes ``out=`` (a GPUArray of the broadcast shape whose dtype the result casts
to under NumPy's same_kind rule) and ``stream=``; binary functions broadcast as NumPy does and
take Python or NumPy scalars. Names: PyCUDA's (``fabs``, ``asin``, ...) and NumPy's
(``arcsin``, ``exp2``, ``log1p``, ``arctan2``, ``hypot``, ``power``, ``cbrt``, ...).
Beyond NumPy: ``fabs`` of complex is the magnitude, ``ceil``/``floor`` of complex round each
component (PyCUDA's complex kernels accepted them); ``ldexp`` takes a float exponent array as
PyCUDA did (truncated to int). ``frexp`` returns int32 exponents (NumPy's; PyCUDA gave floats).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cuplug import _cumath_call as _call
from cuplug import _dtypes
from cuplug._public import public_dir as _public_dir

# Constants the expressions use, spelled out: NVRTC has no M_PI without <math.h>.
_LN2 = "R(0.693147180559945309417232121458176568)"
_LOG2E = "R(1.44269504088896340735992468100189214)"
_LOG10E = "R(0.434294481903251827651128918916605082)"
_DEG = "R(57.2957795130823208767981548141051703)"
_RAD = "R(0.0174532925199432957692369076848861271)"


@dataclass(frozen=True)
class MathFunction:
    """One cumath function. ``real``/``complex``/``integer``: C expression for that kind of loop
    (None: the dtype is refused with a TypeError); for two outputs, statements assigning ``r0``
    and ``r1``. ``complex_out``: the result when NumPy has no complex loop but ``complex`` is
    given ("same" dtype or its "real" part). ``int_args``: operand positions truncated to int
    when given floats (PyCUDA's ldexp)."""

    name: str
    numpy: str
    real: str | None
    complex: str | None = None
    integer: str | None = None
    complex_out: str | None = None
    int_args: tuple = ()
    aliases: tuple = field(default=())

    @property
    def ufunc(self) -> np.ufunc:
        """The NumPy ufunc it matches (results are checked against it)."""
        return getattr(np, self.numpy)

    @property
    def nin(self) -> int:
        """How many input arrays it takes."""
        return self.ufunc.nin

    @property
    def nout(self) -> int:
        """How many arrays it returns."""
        return self.ufunc.nout


_F = MathFunction

#: The table. One row per function; aliases share the row.
FUNCTIONS = (
    # PyCUDA's cumath (spec section 7), with NumPy's names as aliases.
    _F("fabs", "fabs", "fabs(a)", "cuda::std::abs(a)", complex_out="real"),
    _F("ceil", "ceil", "ceil(a)", "C(ceil(a.real()), ceil(a.imag()))", "a", complex_out="same"),
    _F("floor", "floor", "floor(a)", "C(floor(a.real()), floor(a.imag()))", "a", "same"),
    _F("exp", "exp", "exp(a)", "cuda::std::exp(a)"),
    _F("log", "log", "log(a)", "cuda::std::log(a)"),
    _F("log10", "log10", "log10(a)", "cuda::std::log10(a)"),
    _F("sqrt", "sqrt", "sqrt(a)", "cuda::std::sqrt(a)"),
    _F("sin", "sin", "sin(a)", "cuda::std::sin(a)"),
    _F("cos", "cos", "cos(a)", "cuda::std::cos(a)"),
    _F("tan", "tan", "tan(a)", "cuda::std::tan(a)"),
    _F("asin", "arcsin", "asin(a)", "cuda::std::asin(a)", aliases=("arcsin",)),
    _F("acos", "arccos", "acos(a)", "cuda::std::acos(a)", aliases=("arccos",)),
    _F("atan", "arctan", "atan(a)", "cuda::std::atan(a)", aliases=("arctan",)),
    _F("sinh", "sinh", "sinh(a)", "cuda::std::sinh(a)"),
    _F("cosh", "cosh", "cosh(a)", "cuda::std::cosh(a)"),
    _F("tanh", "tanh", "tanh(a)", "cuda::std::tanh(a)"),
    _F("fmod", "fmod", "fmod(a, b)", None, "(b == 0 ? 0 : a % b)"),
    _F("frexp", "frexp", "int e; r0 = frexp(a, &e); r1 = e;"),
    _F("ldexp", "ldexp", "ldexp(a, int(b))", int_args=(1,)),
    _F("modf", "modf", "R ip; r0 = modf(a, &ip); r1 = ip;"),
    # NumPy's other math ufuncs.
    _F("asinh", "arcsinh", "asinh(a)", "cuda::std::asinh(a)", aliases=("arcsinh",)),
    _F("acosh", "arccosh", "acosh(a)", "cuda::std::acosh(a)", aliases=("arccosh",)),
    _F("atanh", "arctanh", "atanh(a)", "cuda::std::atanh(a)", aliases=("arctanh",)),
    _F("exp2", "exp2", "exp2(a)", f"cuda::std::exp(a * {_LN2})"),
    _F(
        "expm1",
        "expm1",
        "expm1(a)",
        # exp(x)(cos y + i sin y) - 1 without losing the small real part: cos y - 1 = -2 sin²(y/2)
        "C(expm1(a.real()) * cos(a.imag()) - R(2) * sin(a.imag() / 2) * sin(a.imag() / 2), "
        "exp(a.real()) * sin(a.imag()))",
    ),
    _F("log2", "log2", "log2(a)", f"cuda::std::log(a) * {_LOG2E}"),
    _F(
        "log1p",
        "log1p",
        "log1p(a)",
        # log|1+z| = log1p(2x + x² + y²) / 2, exact for small z
        "C(R(0.5) * log1p(a.real() * (R(2) + a.real()) + a.imag() * a.imag()), "
        "atan2(a.imag(), R(1) + a.real()))",
    ),
    _F("cbrt", "cbrt", "cbrt(a)"),
    _F("square", "square", "a * a", "a * a", "a * a"),
    _F("rint", "rint", "rint(a)", "C(rint(a.real()), rint(a.imag()))"),
    _F("trunc", "trunc", "trunc(a)", None, "a"),
    _F("deg2rad", "deg2rad", f"a * {_RAD}", aliases=("radians",)),
    _F("rad2deg", "rad2deg", f"a * {_DEG}", aliases=("degrees",)),
    _F("atan2", "arctan2", "atan2(a, b)", aliases=("arctan2",)),
    _F("hypot", "hypot", "hypot(a, b)"),
    _F("power", "power", "pow(a, b)", "cuda::std::pow(a, b)", "cuplug_ipow(a, b)"),
    _F("copysign", "copysign", "copysign(a, b)"),
    _F("fmin", "fmin", "fmin(a, b)", None, "(b < a ? b : a)"),
    _F("fmax", "fmax", "fmax(a, b)", None, "(a < b ? b : a)"),
    _F(
        "logaddexp",
        "logaddexp",
        f"(a == b ? a + {_LN2} : (a > b ? a : b) + log1p(exp(-fabs(a - b))))",
    ),
    _F(
        "logaddexp2",
        "logaddexp2",
        f"(a == b ? a + R(1) : (a > b ? a : b) + log1p(exp2(-fabs(a - b))) * {_LOG2E})",
    ),
)

# Integer power as NumPy computes it (wrapping; negative exponents give 0 except for 1 and -1,
# where NumPy raises; a kernel cannot).
_IPOW = """\
#ifndef CUPLUG_IPOW
#define CUPLUG_IPOW
template <class T> __device__ __forceinline__ bool cuplug_negative(T e) { return e < T(0); }
__device__ __forceinline__ bool cuplug_negative(unsigned char) { return false; }
__device__ __forceinline__ bool cuplug_negative(unsigned short) { return false; }
__device__ __forceinline__ bool cuplug_negative(unsigned int) { return false; }
__device__ __forceinline__ bool cuplug_negative(unsigned long long) { return false; }
template <class T> __device__ __forceinline__ T cuplug_ipow(T b, T e) {
  if (cuplug_negative(e))
    return b == T(1) ? T(1) : (b == T(-1) ? ((e & 1) ? T(-1) : T(1)) : T(0));
  T r = 1;
  while (e) { if (e & 1) r *= b; b *= b; e >>= 1; }
  return r;
}
#endif
"""

# GPUArray's exchange protocols (DLPack, CUDA Array Interface, __array__) until the array
# layer mixes them in itself.

_BY_NAME = {}
for _row in FUNCTIONS:
    for _name in (_row.name, *_row.aliases):
        _BY_NAME[_name] = _row


def function(name: str) -> MathFunction:
    """The table row of a cumath function.

    Parameters
    ----------
    name : str
        The function's name, in either spelling (``arcsin`` or ``asin``).
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise AttributeError(f"cuplug.cumath has no function {name!r}") from None


# {{{ dtypes: NumPy's loops, and the kernel's compute types

_COMPLEX_OF = {
    np.dtype(np.float32): np.dtype(np.complex64),
    np.dtype(np.float64): np.dtype(np.complex128),
}


def _kind(dtype: np.dtype) -> str:
    return {"c": "complex", "f": "real"}.get(dtype.kind, "integer")


def loop_dtypes(fn: MathFunction, operands) -> tuple[tuple, tuple]:
    """(input dtypes, output dtypes) of the loop computing fn over operands (arrays, dtypes or
    Python scalars, weak as in NumPy): NumPy's own choice, or, for the complex cases NumPy
    lacks (fabs, ceil, floor), complex in and ``complex_out`` out. TypeError naming the
    dtypes when neither has one."""
    ops = list(operands)
    for k in fn.int_args:
        dt = _operand_dtype(ops[k])
        if dt is not None and dt.kind == "f":
            ops[k] = np.dtype(np.int32)
    try:
        loop = _dtypes.resolve_ufunc(fn.ufunc, ops, nout=fn.nout)
        ins, outs = tuple(loop[: fn.nin]), tuple(loop[fn.nin :])
    except TypeError as e:
        dtypes = [_operand_dtype(x) for x in ops]
        if fn.complex_out and any(d is not None and d.kind == "c" for d in dtypes):
            c = _dtypes.result_type(*ops)
            out = c if fn.complex_out == "same" else np.dtype(c.char.lower())
            return (c,) * fn.nin, (out,)
        raise TypeError(_unsupported(fn, ops)) from e
    if getattr(fn, _kind(ins[0])) is None:
        raise TypeError(_unsupported(fn, ops))
    return ins, outs


def _operand_dtype(x):
    if isinstance(x, np.dtype):
        return x
    dtype = getattr(x, "dtype", None)
    return None if dtype is None else np.dtype(dtype)


def _describe(x) -> str:
    dt = _operand_dtype(x)
    return str(dt) if dt is not None else f"Python {type(x).__name__}"


def _unsupported(fn: MathFunction, operands) -> str:
    kinds = [k for k in ("real", "complex", "integer") if getattr(fn, k) is not None]
    return (
        f"cumath.{fn.name} is not defined for {', '.join(_describe(x) for x in operands)}: "
        f"it takes {' and '.join(kinds)} dtypes (as numpy.{fn.numpy} does)"
    )


def _compute_type(dtype: np.dtype) -> str:
    """The C type a loop over dtype computes in: float16 computes in float (as NumPy does)."""
    if dtype == np.float16:
        return "float"
    return _dtypes.ctype(dtype)


def _real_type(dtype: np.dtype) -> str:
    if dtype.kind == "c":
        return "float" if dtype == np.complex64 else "double"
    if dtype.kind == "f":
        return "double" if dtype == np.float64 else "float"
    return "double"


# }}}

# {{{ kernel source


@dataclass(frozen=True)
class KernelParts:
    """What the elementwise code generator needs for one function over one set of dtypes:
    the arguments (outputs first, then inputs; ``scalars`` marks inputs passed by value), the
    operation, the loop prep (type names) and the preamble."""

    args: tuple  # of _codegen.elementwise.Arg
    operation: str
    loop_prep: str
    preamble: str
    name: str


def kernel_parts(fn: MathFunction, in_dtypes, out_dtypes, loop, scalars=()) -> KernelParts:
    """Source pieces computing fn's loop (its input and output dtypes, as from loop_dtypes)
    from operands of in_dtypes into outputs of out_dtypes (which may differ: the operands are
    converted, the results cast). scalars: input positions passed by value."""
    from cuplug._codegen.elementwise import Arg

    loop_in, loop_out = loop
    kind = _kind(loop_in[0])
    expr = getattr(fn, kind)
    if expr is None:  # pragma: no cover - loop_dtypes refuses these
        raise TypeError(_unsupported(fn, loop_in))
    real = _real_type(loop_in[0])
    # R: the real type, C: the complex type; both inside the kernel only.
    loop_prep = (
        f"typedef {real} R; typedef cuda::std::complex<R> C"
        if kind == "complex"
        else (f"typedef {real} R")
    )
    args = [Arg(f"out{k}", dt, True) for k, dt in enumerate(out_dtypes)]
    args += [Arg(f"in{k}", dt, k not in scalars) for k, dt in enumerate(in_dtypes)]
    names = "ab"
    decls = []
    for k, dt in enumerate(loop_in):
        ct = _compute_type(dt)
        source = f"in{k}" if k in scalars else f"in{k}[i]"
        decls.append(f"const {ct} {names[k]} = static_cast<{ct}>({source});")
    if fn.nout == 1:
        body = f"out0[i] = {expr};"
    else:
        outs = " ".join(f"{_compute_type(dt)} r{k};" for k, dt in enumerate(loop_out))
        body = f"{outs} {expr} out0[i] = r0; out1[i] = r1;"
    operation = "{ " + " ".join(decls) + " " + body + " }"
    preamble = _IPOW if "cuplug_ipow" in expr else ""
    sig = "".join(dt.str[1:] for dt in (*in_dtypes, *out_dtypes))  # "f4c8": C identifier
    name = f"cuplug_{fn.name}_{sig}{''.join(f's{k}' for k in scalars)}"
    return KernelParts(tuple(args), operation, loop_prep, preamble, name)


# }}}

# {{{ calling


def _is_array(x) -> bool:
    from cuplug import gpuarray

    return isinstance(x, gpuarray.GPUArray)


def _is_scalar(x) -> bool:
    return (
        _dtypes.is_weak_scalar(x)
        or isinstance(x, np.generic)
        or (isinstance(x, np.ndarray) and x.ndim == 0)
    )


_kernels = {}


def _kernel(fn: MathFunction, in_dtypes, scalars, out_dtypes, loop):
    """The engine kernel for fn over these operand and output dtypes (made once, then cached;
    the engine compiles it per launch layout and context on first use)."""
    key = (fn.name, in_dtypes, scalars, out_dtypes, loop)
    kernel = _kernels.get(key)
    if kernel is None:
        from cuplug._kernels import engine

        parts = kernel_parts(fn, in_dtypes, out_dtypes, loop, scalars)
        kernel = engine.Kernel(
            parts.args,
            parts.operation,
            parts.name,
            preamble=parts.preamble,
            loop_prep=parts.loop_prep,
        )
        _kernels[key] = kernel
    return kernel


def _output(fn, k, given, dtype, shape):
    """out= checked (a GPUArray of the broadcast shape whose dtype the result casts to under
    NumPy's same_kind rule), or a new array."""
    from cuplug import gpuarray

    if given is None:
        return gpuarray.empty(shape, dtype)
    if not _is_array(given):
        raise TypeError(f"cumath.{fn.name}(): out must be a GPUArray, got {type(given).__name__}")
    if given.shape != shape:
        raise ValueError(
            f"cumath.{fn.name}(): out has shape {given.shape}, the result has shape {shape}"
        )
    if not np.can_cast(dtype, given.dtype, "same_kind"):
        raise TypeError(
            f"Cannot cast ufunc '{fn.numpy}' output {k} from {dtype!r} to {given.dtype!r} with "
            "casting rule 'same_kind'"
        )
    return given


def _scalar_value(fn, k, x, dtype):
    """A scalar operand for the kernel: Python numbers as they are (the engine converts them as
    NumPy converts weak scalars), NumPy scalars in the loop dtype; PyCUDA's float exponents of
    ldexp truncated."""
    if k in fn.int_args and not isinstance(x, (int, np.integer)):
        return int(x)
    if _dtypes.is_weak_scalar(x):
        return x
    return np.asarray(x).astype(dtype)[()]


def _apply(fn: MathFunction, operands, out, stream):
    if not any(_is_array(x) for x in operands):
        raise TypeError(
            f"cumath.{fn.name}() needs a GPUArray operand, got "
            f"{', '.join(type(x).__name__ for x in operands)} (gpuarray.to_gpu() copies NumPy "
            "arrays to the GPU)"
        )
    for x in operands:
        if not _is_array(x) and not _is_scalar(x):
            raise TypeError(
                f"cumath.{fn.name}(): operands are GPUArrays or scalars, got {type(x).__name__}"
            )
    loop = loop_dtypes(fn, operands)
    outs = out if isinstance(out, tuple) else (None,) * fn.nout if out is None else (out,)
    if len(outs) != fn.nout:
        raise ValueError(f"cumath.{fn.name}() has {fn.nout} outputs, out= gives {len(outs)}")
    arrays = [x for x in operands if _is_array(x)]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        described = " and ".join(f"{a.shape} {a.dtype}" for a in arrays)
        raise ValueError(
            f"cumath.{fn.name}(): operands could not be broadcast together with shapes {described}"
        ) from None
    # Arrays arrive in their own dtype, scalars converted on the host to the loop's.
    scalars = tuple(k for k, x in enumerate(operands) if not _is_array(x))
    in_dtypes = tuple(
        np.dtype(loop[0][k]) if k in scalars else np.dtype(x.dtype) for k, x in enumerate(operands)
    )
    values = [
        x if k not in scalars else _scalar_value(fn, k, x, loop[0][k])
        for k, x in enumerate(operands)
    ]
    results = tuple(_output(fn, k, o, loop[1][k], shape) for k, o in enumerate(outs))
    kernel = _kernel(fn, in_dtypes, scalars, tuple(r.dtype for r in results), loop)
    kernel(*results, *values, stream=stream)
    return results[0] if fn.nout == 1 else results


def _make(fn: MathFunction, name: str):
    def call(*args, out=None, stream=None, **kwargs):
        if kwargs or len(args) != fn.nin:  # PyCUDA's keywords or positional stream / out
            args, out, stream = _call.pycuda_form(fn, name, args, kwargs, out, stream)
        return _apply(fn, args, out, stream)

    names = _call.operand_names(fn)
    outputs = "GPUArray" if fn.nout == 1 else "tuple[GPUArray, GPUArray]"
    call.__name__ = call.__qualname__ = name
    call.__signature__ = _call.signature(fn, outputs)
    operand_docs = "".join(
        f"    {n} : GPUArray | scalar\n        An operand "
        "(NumPy broadcasting and type promotion).\n"
        for n in names
    )
    call.__doc__ = (
        f"numpy.{fn.numpy} on the GPU, element by element.\n\n"
        "    Parameters\n    ----------\n"
        f"{operand_docs}"
        "    out : GPUArray, optional\n        Where the result goes"
        f"{' (a tuple of two arrays)' if fn.nout == 2 else ''}; None: a new array.\n"
        "    stream : Stream, optional\n        The stream the kernel runs on.\n"
        + (
            ""
            if "stream_or_out" not in call.__signature__.parameters
            else "    stream_or_out : Stream | GPUArray, optional\n        PyCUDA's deprecated "
            "positional stream or out (a DeprecationWarning).\n"
        )
        + "\n"
        "    Returns\n    -------\n"
        f"    {outputs}\n        The result{'s' if fn.nout == 2 else ''} (``out`` when "
        "given).\n"
    )
    return call


for _row in FUNCTIONS:
    for _name in (_row.name, *_row.aliases):
        globals()[_name] = _make(_row, _name)
del _row, _name

__all__ = sorted(_BY_NAME) + ["FUNCTIONS", "MathFunction", "function"]

__dir__ = _public_dir(__all__)
