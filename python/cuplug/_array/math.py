"""Elementwise arithmetic: how an operation over given operand kinds and dtypes becomes a kernel
(the resolver C++ calls once per combination), and the functions of cuplug.gpuarray built on
``_core._array.apply``: minimum, maximum, where, if_positive, logical_*, clip, ...

The one dispatcher: the operators, these functions, GPUArray's methods and cuplug.cumath all
call ``_core._array.apply(name, operands, out, stream)``; its misses come to :func:`_resolve`,
which resolves ``name`` in the one operation table (cuplug._codegen.ops: dtypes, source) and
makes the kernel. Every result dtype is NumPy's: ``ufunc.resolve_dtypes`` with Python scalars
weak.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cuplug import _core, _dtypes
from cuplug._codegen import ops as _ops
from cuplug._kernels.engine import Arg, Kernel

from .creation import _full_like_shape, empty
from .fuse_trace import apply as _fuse_apply

if TYPE_CHECKING:
    from typing_extensions import Protocol

    from .core import GPUArray

    class _Binary(Protocol):
        """minimum / maximum as type checkers see them."""

        def __call__(
            self, a: Any, b: Any, out: GPUArray | None = None, stream: Any = None
        ) -> GPUArray: ...


_apply = _core._array.apply

__all__ = [
    "apply",
    "clip",
    "if_positive",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "where",
]

_kernels = {}


def _operand_type(descr):
    """What NumPy's resolution takes for a descriptor C++ passes: an array's dtype, a NumPy
    scalar's dtype ("scalar", dtype), or a Python type (weak)."""
    if isinstance(descr, tuple):
        return np.dtype(descr[1]), True
    if isinstance(descr, type):
        return descr, True
    return np.dtype(descr), False


def _resolve(name, descriptors, out_dtype):
    """C++'s dispatch miss: (ElementwiseCore, result dtype - a tuple of them for several
    outputs -, whether a scalar exponent must be checked) for operation `name` of the one
    table (cuplug._codegen.ops) over operands described by `descriptors`, written to arrays
    of `out_dtype` (None: new arrays of NumPy's result dtypes; a tuple for several outputs).
    Raises TypeError for dtypes or combinations NumPy (or arrays) do not support."""
    kinds = [_operand_type(d) for d in descriptors]
    types = [t for t, _ in kinds]
    scalar = tuple(s for _, s in kinds)
    p = _ops.plan(name, types, out_dtype)
    kernel = _kernel(p.row.name if p.row is not None else name, types, scalar, p)
    int_power = name == "power" and p.loop_in[1].kind in "iu"
    return kernel.core, (p.results[0] if len(p.results) == 1 else p.results), int_power


def _kernel(name, types, scalar, p):
    # Arrays arrive in their own dtype; scalars are converted on the host to the loop dtype.
    arrive = tuple(li if s else t for t, s, li in zip(types, scalar, p.loop_in))
    key = (name, arrive, scalar, p.results, p.loop_in, p.loop_out)
    kernel = _kernels.get(key)
    if kernel is None:
        statement, preamble = _ops.operation(name, arrive, scalar, p.loop_in, p.loop_out, p.results)
        outs = ["z"] if len(p.results) == 1 else [f"z{k}" for k in range(len(p.results))]
        args = [Arg(z, dt, True) for z, dt in zip(outs, p.results)]
        for k, (dt, s) in enumerate(zip(arrive, scalar)):
            args.append(Arg(f"s{k}" if s else f"x{k}", dt, not s))
        tag = "".join(_dtypes.tag(dt) + ("s" if s else "") for dt, s in zip(arrive, scalar))
        results = "".join(_dtypes.tag(dt) for dt in p.results)
        kname = f"cuplug_{name.strip('_')}_{results}_{tag}"
        kernel = Kernel(args, statement, kname, preamble=preamble, builtin=True)
        _kernels[key] = kernel
    return kernel


def kernel_for(name, descriptors, out_dtype=None):
    """The Kernel _resolve would make (for tests and tools: its .source(layout) needs no
    device). Descriptors as C++ passes them: dtypes, ("scalar", dtype), Python types."""
    core = _resolve(name, descriptors, out_dtype)[0]
    for k in _kernels.values():
        if k.core is core:
            return k
    raise AssertionError("resolved kernel not found")


_COMPARISONS = {
    "equal": lambda big: False,
    "not_equal": lambda big: True,
    "less": lambda big: big,
    "less_equal": lambda big: big,
    "greater": lambda big: not big,
    "greater_equal": lambda big: not big,
}


def _fallback(name, operands, out, stream, error):
    """What C++ does not cache: comparisons with a Python int out of the array dtype's range
    (NumPy 2 answers them without converting it) and NumPy 1.x's value-based promotion."""
    if error is not None:
        if name in _COMPARISONS and len(operands) == 2:
            arrays = [x for x in operands if hasattr(x, "_type_code")]
            ints = [x for x in operands if isinstance(x, int) and not isinstance(x, bool)]
            if len(arrays) == 1 and len(ints) == 1:
                big = ints[0] > 0
                if operands[0] is ints[0] and name not in ("equal", "not_equal"):
                    big = not big  # the int is on the left: a > x means x < a
                value = _COMPARISONS[name](big)
                return _full_like_shape(arrays[0], value, np.bool_, out, stream)
        raise error
    # NumPy 1.x: weak scalars take the dtype value-based promotion gives them.
    arrays = [x for x in operands if hasattr(x, "_type_code")]
    converted = []
    for x in operands:
        if _dtypes.is_weak_scalar(x):
            dt = np.result_type(*[a.dtype for a in arrays], x) if arrays else np.result_type(x)
            converted.append(np.array(x, dtype=dt)[()])
        else:
            converted.append(x)
    return _apply(name, tuple(converted), out, stream)


_core._register_hooks(
    dispatch_resolver=_resolve, dispatch_fallback=_fallback, legacy_promotion=not _dtypes.NEP50
)


# ---- functions ----------------------------------------------------------------------------------


def broadcast_shape(*arrays):
    """NumPy's broadcast shape of the arrays' shapes; ValueError naming shapes and dtypes."""
    try:
        return np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = " and ".join(f"{a.shape} {a.dtype}" for a in arrays)
        raise ValueError(f"operands could not be broadcast together with shapes {shapes}") from None


def _traced(name, operands, out, error):
    """Inside cuplug.fuse's trace: the traced result; else raises ``error`` (the operation's
    own TypeError)."""
    traced = _fuse_apply(name, operands, out)
    if traced is None:
        raise error
    return traced


def apply(name, *operands, out=None, stream=None):
    """The elementwise operation `name` (a NumPy ufunc name: "add", "maximum", "isnan", ...)
    over GPUArrays and scalars, with NumPy's broadcasting and result dtype."""
    return _apply(name, operands, out, stream)


def _binary(name: str, doc: str) -> _Binary:
    def f(a: Any, b: Any, out: GPUArray | None = None, stream: Any = None) -> GPUArray:
        try:
            return _apply(name, (a, b), out, stream)
        except TypeError as e:
            return _traced(name, (a, b), out, e)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"{doc}\n\n    Parameters\n    ----------\n"
        "    a, b : GPUArray | scalar\n        The operands (broadcast).\n"
        "    out : GPUArray | None\n        Where the result goes; None: a new array.\n"
        "    stream : Stream | None\n        The stream the kernel runs on.\n\n"
        "    Returns\n    -------\n    GPUArray\n        The result (``out`` when given).\n"
    )
    return f


minimum = _binary("minimum", "Elementwise minimum (NaN-propagating, as numpy.minimum).")
maximum = _binary("maximum", "Elementwise maximum (NaN-propagating, as numpy.maximum).")


def _logical(name, operands, out, allocator, stream):
    """A logical ufunc; with ``allocator`` (and no ``out``) the bool result is allocated by it."""
    if allocator is not None and out is None:
        try:
            shape = np.broadcast_shapes(*(getattr(x, "shape", ()) for x in operands))
        except ValueError:
            shape = None  # the operation itself names the shapes that do not broadcast
        if shape is not None:
            out = empty(shape, np.bool_, allocator=allocator)
    return _apply(name, operands, out, stream)


def logical_and(x1, x2, /, out=None, *, allocator=None, stream=None) -> GPUArray:
    """Elementwise truth of x1 and x2 (bool result).

    Parameters
    ----------
    x1, x2 : GPUArray | scalar
        The operands (broadcast).
    out : GPUArray | None
        Where the result goes; None: a new array.
    allocator : collections.abc.Callable | None
        Allocates the result's memory; None: the current allocator.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    GPUArray
        The result (``out`` when given).
    """
    return _logical("logical_and", (x1, x2), out, allocator, stream)


def logical_or(x1, x2, /, out=None, *, allocator=None, stream=None) -> GPUArray:
    """Elementwise truth of x1 or x2 (bool result).

    Parameters
    ----------
    x1, x2 : GPUArray | scalar
        The operands (broadcast).
    out : GPUArray | None
        Where the result goes; None: a new array.
    allocator : collections.abc.Callable | None
        Allocates the result's memory; None: the current allocator.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    GPUArray
        The result (``out`` when given).
    """
    return _logical("logical_or", (x1, x2), out, allocator, stream)


def logical_xor(x1, x2, /, out=None, *, allocator=None, stream=None) -> GPUArray:
    """Elementwise truth of x1 xor x2 (bool result).

    Parameters
    ----------
    x1, x2 : GPUArray | scalar
        The operands (broadcast).
    out : GPUArray | None
        Where the result goes; None: a new array.
    allocator : collections.abc.Callable | None
        Allocates the result's memory; None: the current allocator.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    GPUArray
        The result (``out`` when given).
    """
    return _logical("logical_xor", (x1, x2), out, allocator, stream)


def logical_not(x, /, out=None, *, allocator=None, stream=None) -> GPUArray:
    """Elementwise negated truth of x (bool result).

    Parameters
    ----------
    x : GPUArray | scalar
        The operand.
    out : GPUArray | None
        Where the result goes; None: a new array.
    allocator : collections.abc.Callable | None
        Allocates the result's memory; None: the current allocator.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    GPUArray
        The result (``out`` when given).
    """
    return _logical("logical_not", (x,), out, allocator, stream)


def where(criterion, then_, else_, out=None, stream=None) -> GPUArray:
    """then_ where criterion is nonzero, else else_; broadcast, result dtype
    numpy.result_type(then_, else_).

    Parameters
    ----------
    criterion : GPUArray
        Where nonzero, ``then_`` is taken.
    then_, else_ : GPUArray | scalar
        The values.
    out : GPUArray | None
        Where the result goes; None: a new array.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    GPUArray
        The result (``out`` when given).
    """
    try:
        return _apply("where", (criterion, then_, else_), out, stream)
    except TypeError as e:
        return _traced("where", (criterion, then_, else_), out, e)


def if_positive(criterion, then_, else_, out=None, stream=None) -> GPUArray:
    """then_ where criterion > 0, else else_ (broadcast as numpy.where).

    Parameters
    ----------
    criterion : GPUArray
        Where positive, ``then_`` is taken.
    then_, else_ : GPUArray | scalar
        The values.
    out : GPUArray | None
        Where the result goes; None: a new array.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    GPUArray
        The result (``out`` when given).
    """
    positive = _apply("greater", (criterion, 0), None, stream)
    return _apply("where", (positive, then_, else_), out, stream)


def clip(a, a_min, a_max, out=None, stream=None) -> GPUArray:
    """a limited to [a_min, a_max] (numpy.clip; NaNs propagate).

    Parameters
    ----------
    a : GPUArray
        The array.
    a_min, a_max : scalar | GPUArray | None
        The bounds; None: unbounded on that side.
    out : GPUArray | None
        Where the result goes; None: a new array.
    stream : Stream | None
        The stream the kernel runs on.

    Returns
    -------
    GPUArray
        The result (``out`` when given).
    """
    if a_min is None and a_max is None:
        raise ValueError("clip: at least one of a_min and a_max must be given")
    if a_min is None:
        return _apply("minimum", (a, a_max), out, stream)
    if a_max is None:
        return _apply("maximum", (a, a_min), out, stream)
    return _apply("clip", (a, a_min, a_max), out, stream)
