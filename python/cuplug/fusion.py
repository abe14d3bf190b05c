"""``cuplug.fuse``: a function of GPUArrays and scalars run as ONE elementwise kernel (CuPy's
``cupy.fuse``), with the results the unfused code gives, dtype by dtype. docs/fuse.md says what
it traces and what it refuses.

The machinery is cuplug._array.fuse (trace, kernel, cache) over the elementwise engine.
"""

from __future__ import annotations

from typing import Any, Callable

from cuplug._array.fuse import Fused
from cuplug._array.fuse_trace import FuseError
from cuplug._public import public_dir as _public_dir

__all__ = ["FuseError", "Fused", "fuse"]


def fuse(fn: Callable[..., Any]) -> Fused:
    """Fuses ``fn`` into one elementwise kernel: ``@cuplug.fuse`` or ``cuplug.fuse(fn)``.

    ``fn`` takes GPUArrays and Python or NumPy scalars and returns a GPUArray (or a tuple of
    them) computed with arithmetic and comparison operators, unary minus and ``abs``,
    ``astype``, cuplug.cumath's functions, gpuarray.where / minimum / maximum. It is traced
    once per argument signature (dtypes, scalar kinds, ndims) into one kernel of the
    elementwise engine (broadcasting, any strides, cached per context); each result has the
    dtype and values the same code gives unfused (NumPy's rules, NEP 50 weak Python scalars).
    Values that are not arguments (constants, globals) are captured at the first trace.

    Parameters
    ----------
    fn : collections.abc.Callable
        The function to fuse.

    Returns
    -------
    Fused
        Callable as ``fn`` is, plus ``stream=``; ``.kernel(*args)`` gives the kernel a call
        with these arguments runs.

    Raises
    ------
    FuseError
        (a TypeError, at the first call of a signature) for what the tracer cannot follow:
        ``if`` on an array value, ``float(x)``, unsupported functions or attributes, GPUArrays
        that are not arguments; the message names the construct and the line.
    """
    return Fused(fn)


__dir__ = _public_dir(__all__)
