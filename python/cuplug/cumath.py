"""Elementwise math on GPUArrays (``pycuda.cumath``), for every float and complex dtype.

Each function is a row of the one operation table (cuplug._codegen.ops, rows marked
``cumath``) and runs through the one elementwise dispatcher the operators use
(``_core._array.apply``): ``cumath.power(x, y)`` and ``x ** y`` are the same kernel. Result
dtypes are NumPy's (``sin(int8)`` is float16 and ``sin(int32)`` float64).

Every function takes ``out=`` (a GPUArray of the broadcast shape whose dtype the result casts
to under NumPy's same_kind rule) and ``stream=``; binary functions broadcast as NumPy does and
take Python or NumPy scalars. Names: PyCUDA's (``fabs``, ``asin``, ...) and NumPy's
(``arcsin``, ``exp2``, ``log1p``, ``arctan2``, ``hypot``, ``power``, ``cbrt``, ...).
Beyond NumPy: ``fabs`` of complex is the magnitude, ``ceil``/``floor`` of complex round each
component (PyCUDA's complex kernels accepted them); ``ldexp`` takes a float exponent array as
PyCUDA did (truncated to int). ``frexp`` returns int32 exponents (NumPy's; PyCUDA gave floats).

PyCUDA's call forms stay here, with the names: the operand keywords (``sin(array=x)``,
``fmod(arg=a, mod=b)``, ``ldexp(significand=s, exponent=e)``), the positional stream of fmod /
ldexp / frexp / modf, the deprecated positional ``stream_or_out`` of the unary functions, and
the signatures help() shows. They are parsed only when a call is not the plain
``f(*operands, out=, stream=)``, so that form stays as fast as the operators.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from cuplug import _core
from cuplug._array.fuse_trace import Traced as _Traced
from cuplug._array.fuse_trace import apply as _fuse_apply
from cuplug._codegen import ops as _ops
from cuplug._codegen.ops import Op as MathFunction
from cuplug._public import public_dir as _public_dir

_apply = _core._array.apply
_ArrayBase = _core._array.ArrayBase
# Operands that make a call an array operation: GPUArrays and cuplug.fuse's traced values.
_ARRAYS = (_ArrayBase, _Traced)

#: The rows of the operation table that are cumath functions (aliases share their row).
FUNCTIONS = _ops.cumath_rows()

_BY_NAME = {n: row for row in FUNCTIONS for n in (row.name, *row.aliases)}


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


# {{{ PyCUDA's call forms

# PyCUDA's parameter names where they are not ``array`` (unary) / ``x1, x2`` (cuplug's binary).
_OPERANDS = {
    "fmod": ("arg", "mod"),
    "ldexp": ("significand", "exponent"),
    "frexp": ("arg",),
    "modf": ("arg",),
}
# Functions whose next positional parameter is ``stream`` in PyCUDA (not ``stream_or_out``).
_STREAM_NEXT = ("fmod", "ldexp", "frexp", "modf")


def _operand_names(fn) -> tuple:
    """PyCUDA's names of fn's operands."""
    return _OPERANDS.get(fn.name, ("array",) if fn.nin == 1 else ("x1", "x2"))


def _stream_next(fn) -> bool:
    return fn.name in _STREAM_NEXT or fn.nin != 1 or fn.nout != 1


def _stream_or_out(name, value, out, stream):
    """PyCUDA's deprecated ``f(array, stream_or_out)``: honoured (PyCUDA warned and then used
    it), with PyCUDA's DeprecationWarning."""
    warnings.warn(
        "Passing stream or out as a positional argument is deprecated; use stream= or out=",
        DeprecationWarning,
        stacklevel=4,
    )
    if isinstance(value, _ArrayBase):
        if out is not None:
            raise TypeError(f"cumath.{name}(): out given twice")
        return value, stream
    if stream is not None:
        raise TypeError(f"cumath.{name}(): stream given twice")
    return out, value


def _pycuda_form(fn, name, args, kwargs, out, stream):
    """(operands, out, stream) of a call made with PyCUDA's keywords or extra positionals."""
    names = _operand_names(fn)
    args = list(args)
    for n in names[len(args) :]:
        if n in kwargs:
            args.append(kwargs.pop(n))
    given_twice = [n for n in names[: len(args)] if n in kwargs]
    if given_twice:
        raise TypeError(f"cumath.{name}() got multiple values for argument {given_twice[0]!r}")
    stream_or_out = kwargs.pop("stream_or_out", None) if not _stream_next(fn) else None
    if kwargs:
        raise TypeError(
            f"cumath.{name}() got unexpected keyword argument(s) {', '.join(sorted(kwargs))}; "
            f"it takes {', '.join(names)}, out= and stream="
        )
    if len(args) < fn.nin:
        missing = ", ".join(repr(n) for n in names[len(args) :])
        raise TypeError(f"cumath.{name}() missing operand(s) {missing}")
    operands, rest = args[: fn.nin], args[fn.nin :]
    if stream_or_out is not None:
        rest.append(stream_or_out)
    if len(rest) > 1:
        raise TypeError(
            f"cumath.{name}() takes {fn.nin} operand(s) and one stream"
            f"{'' if _stream_next(fn) else ' or out'}, got {len(args)} positional arguments"
        )
    if rest:
        if not _stream_next(fn):
            out, stream = _stream_or_out(name, rest[0], out, stream)
        elif stream is not None:
            raise TypeError(f"cumath.{name}() got multiple values for argument 'stream'")
        else:
            stream = rest[0]
    return tuple(operands), out, stream


def _signature(fn, outputs) -> inspect.Signature:
    """What help() and IDEs show: PyCUDA's parameters, then cuplug's keyword-only ones."""
    param = inspect.Parameter
    params = [
        param(n, param.POSITIONAL_OR_KEYWORD, annotation="GPUArray") for n in _operand_names(fn)
    ]
    if _stream_next(fn):
        params += [
            param("stream", param.POSITIONAL_OR_KEYWORD, default=None, annotation="Stream | None"),
            param("out", param.KEYWORD_ONLY, default=None, annotation="GPUArray | None"),
        ]
    else:
        params += [
            param(
                "stream_or_out",
                param.POSITIONAL_OR_KEYWORD,
                default=None,
                annotation="Stream | GPUArray | None",
            ),
            param("out", param.KEYWORD_ONLY, default=None, annotation="GPUArray | None"),
            param("stream", param.KEYWORD_ONLY, default=None, annotation="Stream | None"),
        ]
    return inspect.Signature(params, return_annotation=outputs)


# }}}

# {{{ calling


def _operands(fn, args):
    """The operands as the dispatcher takes them, checked as PyCUDA's cumath needs: at least
    one GPUArray (a kernel over scalars alone has no shape), 0-d NumPy arrays as scalars, and
    PyCUDA's float exponents of ldexp truncated to int (the table's ``int_args``)."""
    if not any(isinstance(x, _ARRAYS) for x in args):
        raise TypeError(
            f"cumath.{fn.name}() needs a GPUArray operand, got "
            f"{', '.join(type(x).__name__ for x in args)} (gpuarray.to_gpu() copies NumPy "
            "arrays to the GPU)"
        )
    ops = list(args)
    for k, x in enumerate(ops):
        if isinstance(x, _ARRAYS):
            continue
        if isinstance(x, np.ndarray) and x.ndim == 0:
            x = ops[k] = x[()]
        if k in fn.int_args and isinstance(x, (float, np.floating)):
            ops[k] = int(x)
        elif not isinstance(x, (int, float, complex, np.generic)):
            raise TypeError(
                f"cumath.{fn.name}(): operands are GPUArrays or scalars, got {type(x).__name__}"
            )
    return tuple(ops)


def _make(fn: MathFunction, name: str):
    op = fn.name  # one dispatch entry for both spellings

    def call(*args, out=None, stream=None, **kwargs):
        if kwargs or len(args) != fn.nin:  # PyCUDA's keywords or positional stream / out
            args, out, stream = _pycuda_form(fn, name, args, kwargs, out, stream)
        operands = _operands(fn, args)
        try:
            return _apply(op, operands, out, stream)
        except TypeError:
            traced = _fuse_apply(op, operands, out)  # inside cuplug.fuse's trace
            if traced is None:
                raise
            return traced

    names = _operand_names(fn)
    outputs = "GPUArray" if fn.nout == 1 else "tuple[GPUArray, GPUArray]"
    call.__name__ = call.__qualname__ = name
    call.__signature__ = _signature(fn, outputs)
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


for _name, _row in _BY_NAME.items():
    globals()[_name] = _make(_row, _name)
del _row, _name

# }}}

__all__ = sorted(_BY_NAME) + ["FUNCTIONS", "MathFunction", "function"]

__dir__ = _public_dir(__all__)
