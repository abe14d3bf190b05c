"""PyCUDA's call forms of the cumath functions: the operand keywords (``sin(array=x)``,
``fmod(arg=a, mod=b)``, ``ldexp(significand=s, exponent=e)``), the positional stream of fmod /
ldexp / frexp / modf, the deprecated positional ``stream_or_out`` of the unary functions, and
the signature help() shows. cuplug.cumath calls ``pycuda_form`` only when a call is not the
plain ``f(*operands, out=, stream=)``, so that form stays as fast as before."""

from __future__ import annotations

import inspect
import warnings

# PyCUDA's parameter names where they are not ``array`` (unary) / ``x1, x2`` (cuplug's binary).
_OPERANDS = {
    "fmod": ("arg", "mod"),
    "ldexp": ("significand", "exponent"),
    "frexp": ("arg",),
    "modf": ("arg",),
}
# Functions whose next positional parameter is ``stream`` in PyCUDA (not ``stream_or_out``).
_STREAM_NEXT = ("fmod", "ldexp", "frexp", "modf")


def operand_names(fn) -> tuple:
    """PyCUDA's names of fn's operands."""
    return _OPERANDS.get(fn.name, ("array",) if fn.nin == 1 else ("x1", "x2"))


def _stream_next(fn) -> bool:
    return fn.name in _STREAM_NEXT or fn.nin != 1 or fn.nout != 1


def _is_array(x) -> bool:
    from cuplug import gpuarray

    return isinstance(x, gpuarray.GPUArray)


def _stream_or_out(fn, name, value, out, stream):
    """PyCUDA's deprecated ``f(array, stream_or_out)``: honoured (PyCUDA warned and then used
    it), with PyCUDA's DeprecationWarning."""
    warnings.warn(
        "Passing stream or out as a positional argument is deprecated; use stream= or out=",
        DeprecationWarning,
        stacklevel=4,
    )
    if _is_array(value):
        if out is not None:
            raise TypeError(f"cumath.{name}(): out given twice")
        return value, stream
    if stream is not None:
        raise TypeError(f"cumath.{name}(): stream given twice")
    return out, value


def pycuda_form(fn, name, args, kwargs, out, stream):
    """(operands, out, stream) of a call made with PyCUDA's keywords or extra positionals."""
    names = operand_names(fn)
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
            out, stream = _stream_or_out(fn, name, rest[0], out, stream)
        elif stream is not None:
            raise TypeError(f"cumath.{name}() got multiple values for argument 'stream'")
        else:
            stream = rest[0]
    return operands, out, stream


def signature(fn, outputs) -> inspect.Signature:
    """What help() and IDEs show: PyCUDA's parameters, then cuplug's keyword-only ones."""
    param = inspect.Parameter
    params = [
        param(n, param.POSITIONAL_OR_KEYWORD, annotation="GPUArray") for n in operand_names(fn)
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
