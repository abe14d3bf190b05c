"""cuplug.fuse's machinery: a fused function is traced (cuplug._array.fuse_trace) once per
argument signature - per argument, a GPUArray's (dtype, ndim) or a scalar's kind (its Python
type, or a NumPy scalar's dtype) - into an expression DAG whose dtypes are the unfused ones,
then written as ONE statement of the elementwise engine (cuplug._kernels.engine.Kernel: its
broadcasting, strides, layouts and per-context cache), each node the statement
cuplug._codegen.ops.operation writes for the unfused kernel, with its operands renamed to the
kernel's arguments and the previous nodes' temporaries. Intermediate values are held in their
result dtype, as the unfused arrays hold them, so every result equals the unfused one dtype by
dtype.
"""

from __future__ import annotations

import functools
import re
import traceback
from typing import Any

import numpy as np

from cuplug import _core, _dtypes
from cuplug._codegen import ops as _ops
from cuplug._kernels.engine import Arg, Kernel

from .creation import empty
from .fuse_trace import FuseError, Proxy, Trace, user_line

__all__ = ["Fused", "generate"]

_ArrayBase = _core._array.ArrayBase
_PLACEHOLDER = re.compile(r"\b(?:x(\d)\[i\]|s(\d)\b|z(\d?)\[i\])")


def _value_name(src, k, temps):
    """The C expression of output ``k`` of ``src``: an argument's element or a temporary."""
    return f"a{src.arg}[i]" if src.name is None else f"t{temps[id(src)]}_{k}"


def generate(trace, outputs, name="fused"):
    """The :class:`Kernel` computing ``outputs`` ((Node, k) each) of ``trace``, and the lists
    (array argument positions, scalar slots) its operands come from, after the outputs.

    Parameters
    ----------
    trace : Trace
        The traced DAG.
    outputs : list[tuple]
        The (node, output index) of each result.
    name : str
        The kernel's name (a C identifier).

    Returns
    -------
    tuple
        (Kernel, array argument positions, scalar slots).
    """
    live, stack = set(), [node for node, _ in outputs]
    while stack:
        node = stack.pop()
        if id(node) in live:
            continue
        live.add(id(node))
        stack += [src for src, _ in node.inputs if src != "scalar"]
    arrays = sorted({n.arg for n in trace.nodes if id(n) in live and n.name is None})
    slots, temps, lines, preambles = [], {}, [], []
    for node in trace.nodes:
        if id(node) not in live or node.name is None:
            continue
        temps[id(node)] = n = len(temps)
        p, arrive, scalar, names = node.plan, [], [], []
        for k, (src, j) in enumerate(node.inputs):
            if src == "scalar":
                arrive.append(p.loop_in[k])
                scalar.append(True)
                names.append(f"p{j}")
                slots.append(j)
            else:
                arrive.append(src.results[j])
                scalar.append(False)
                names.append(_value_name(src, j, temps))
        stmt, pre = _ops.operation(node.name, arrive, scalar, p.loop_in, p.loop_out, p.results)

        def rename(m, names=names, n=n):
            if m.group(1) is not None:
                return names[int(m.group(1))]
            if m.group(2) is not None:
                return names[int(m.group(2))]
            return f"t{n}_{m.group(3) or 0}"

        lines += [f"{_dtypes.ctype(dt)} t{n}_{k};" for k, dt in enumerate(p.results)]
        lines.append(_PLACEHOLDER.sub(rename, stmt))
        if pre and pre not in preambles:
            preambles.append(pre)
    args = [Arg(f"o{k}", node.results[j], True) for k, (node, j) in enumerate(outputs)]
    for k, (node, j) in enumerate(outputs):
        lines.append(f"o{k}[i] = {_value_name(node, j, temps)};")
    args += [Arg(f"a{j}", _leaf(trace, j).results[0], True) for j in arrays]
    slots = sorted(set(slots))
    args += [Arg(f"p{m}", trace.scalars[m][1], False) for m in slots]
    kernel = Kernel(args, "\n".join(lines), name, preamble="".join(preambles), builtin=True)
    return kernel, arrays, slots


def _depends(node):
    """The positions of the array arguments ``node`` is computed from."""
    seen, stack, args = set(), [node], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.name is None:
            args.add(n.arg)
        stack += [src for src, _ in n.inputs if src != "scalar"]
    return args


def _leaf(trace, arg):
    return next(n for n in trace.nodes if n.name is None and n.arg == arg)


def _signature(args):
    key = []
    for x in args:
        if isinstance(x, _ArrayBase):
            key.append(("a", x.dtype, len(x.shape)))
        elif isinstance(x, np.generic):
            key.append(("s", x.dtype))
        elif isinstance(x, np.ndarray) and x.ndim == 0:
            key.append(("s", x.dtype))
        elif type(x) in (bool, int, float, complex):
            key.append(("s", type(x)))
        else:
            raise TypeError(
                f"cuplug.fuse: arguments are GPUArrays and scalars, got {type(x).__name__} "
                "(gpuarray.to_gpu() copies NumPy arrays to the GPU)"
            )
    return tuple(key)


class _Compiled:
    """One signature's kernel: what to pass it, how to shape and return the results."""

    def __init__(self, fn, key):
        trace = Trace()
        proxies = [
            trace.leaf(k, kind[1], kind[2]) if kind[0] == "a" else trace.scalar_arg(k, None)
            for k, kind in enumerate(key)
        ]
        for p, kind in zip(proxies, key):
            if kind[0] == "s":  # a typed stand-in value decides the dtypes
                p.value = kind[1](1) if isinstance(kind[1], type) else np.ones((), kind[1])[()]
        try:
            result = fn(*proxies)
        except FuseError:
            raise
        except Exception as e:
            where = user_line(traceback.extract_tb(e.__traceback__))
            raise FuseError(
                f"cuplug.fuse cannot trace {fn.__name__}: {type(e).__name__}: {e}{where}"
            ) from e
        self.single = not isinstance(result, tuple)
        results = (result,) if self.single else result
        for r in results:
            if not isinstance(r, Proxy):
                raise FuseError(
                    f"cuplug.fuse: {fn.__name__} must return GPUArray values (a tuple of them for "
                    f"several results), got {type(r).__name__}"
                )
        name = "cuplug_fuse_" + re.sub(r"\W", "_", fn.__name__)
        self.kernel, self.arrays, slots = generate(trace, [(r._node, r._k) for r in results], name)
        self.scalars = [(trace.scalars[m][0], trace.scalars[m][1]) for m in slots]
        self.checks = [trace.scalars[m][0] for m in trace.checks if m in slots]
        self.dtypes = [r.dtype for r in results]
        # Per result, the array arguments it depends on where that is not all of them: its
        # unfused shape may then be smaller than the kernel's (refused at the call).
        self.partial = [
            deps for deps in (_depends(r._node) for r in results) if deps != set(self.arrays)
        ]

    def __call__(self, args, stream):
        args = [x[()] if isinstance(x, np.ndarray) else x for x in args]
        for get in self.checks:
            if get(args) < 0:
                raise ValueError("Integers to negative integer powers are not allowed.")
        arrays = [args[j] for j in self.arrays]
        if not arrays:
            raise TypeError("cuplug.fuse: the results depend on no GPUArray argument")
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError:
            shapes = " and ".join(f"{a.shape} {a.dtype}" for a in arrays)
            raise ValueError(
                f"operands could not be broadcast together with shapes {shapes}"
            ) from None
        for deps in self.partial:
            own = np.broadcast_shapes(*(args[j].shape for j in deps)) if deps else ()
            if own != shape:
                raise ValueError(
                    f"cuplug.fuse: results of different shapes ({own} and {shape}) are not "
                    "fused yet; fuse each result's function separately"
                )
        outs = [empty(shape, dt) for dt in self.dtypes]
        values = []
        for get, dt in self.scalars:
            v = get(args)
            if dt.kind in "iu" and isinstance(v, (float, np.floating)):
                v = int(v)  # ldexp's float exponents, truncated as the unfused call does
            values.append(v)
        self.kernel(*outs, *arrays, *values, stream=stream)
        return outs[0] if self.single else tuple(outs)


class Fused:
    """A function of GPUArrays and scalars run as one elementwise kernel (see cuplug.fuse)."""

    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"cuplug.fuse takes a function, got {type(fn).__name__}")
        self.fn = fn
        self._cache = {}
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, stream: Any = None) -> Any:
        key = _signature(args)
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = self._cache[key] = _Compiled(self.fn, key)
        return compiled(args, stream)

    def kernel(self, *args):
        """The :class:`~cuplug._kernels.engine.Kernel` a call with these arguments runs
        (traced on first use; nothing is launched).

        Parameters
        ----------
        *args : GPUArray | scalar
            Arguments as the call would take them.
        """
        key = _signature(args)
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = self._cache[key] = _Compiled(self.fn, key)
        return compiled.kernel

    def __repr__(self):
        return f"<cuplug.fuse of {self.fn!r}>"
