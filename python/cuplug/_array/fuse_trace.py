"""The tracer of cuplug.fuse: proxies stand for a fused function's GPUArray arguments, and every
operation on them (operators, cuplug.cumath, gpuarray.where / minimum / maximum, ``astype``,
NumPy ufuncs) records one node of an expression DAG whose dtypes are resolved by the one
operation table (cuplug._codegen.ops.plan) exactly as the unfused dispatcher resolves them:
operands arrive as arrays of their dtype (arguments and intermediate results) or as scalars
(Python scalars weak, NumPy scalars strong, NEP 50).

What the tracer cannot follow (``if`` on a proxy, ``float(x)``, an attribute of GPUArray it does
not model, a GPUArray that is not an argument) raises :class:`FuseError`, a TypeError naming the
construct and the line of the user's code.
"""

from __future__ import annotations

import operator
import os
import sys

import numpy as np

from cuplug import _core
from cuplug._codegen import ops as _ops

__all__ = ["FuseError", "Proxy", "ScalarArg", "Trace", "Traced", "apply", "user_line"]

_ArrayBase = _core._array.ArrayBase
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SCALARS = (bool, int, float, complex, np.generic)
# NumPy's ufuncs -> rows of the operation table (as cuplug._array.numpy_protocols maps them).
_UFUNCS = {row.ufunc: row.name for row in _ops.TABLE}
_UFUNCS.setdefault(np.degrees, "rad2deg")
_UFUNCS.setdefault(np.radians, "deg2rad")


class FuseError(TypeError):
    """A construct cuplug.fuse cannot trace (a TypeError)."""


_LIBRARIES = (_PACKAGE + os.sep, os.path.dirname(os.path.abspath(np.__file__)) + os.sep)


def _in_package(filename):
    """Whether a frame's file is cuplug's or NumPy's (not the user's code)."""
    return os.path.abspath(filename).startswith(_LIBRARIES)


def user_line(frames=None) -> str:
    """``file:line`` of the innermost frame outside cuplug and NumPy ("" when there is none):
    the line of the fused function that did what the tracer cannot follow. ``frames``: a
    traceback's frames (traceback.extract_tb); None: the current stack."""
    if frames is not None:
        for fs in reversed(frames):
            if not _in_package(fs.filename):
                return f" (at {fs.filename}:{fs.lineno}: {(fs.line or '').strip()})"
        return ""
    f = sys._getframe(1)
    while f is not None and _in_package(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return ""
    import linecache

    text = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f" (at {f.f_code.co_filename}:{f.f_lineno}: {text})"


def _refuse(what):
    raise FuseError(f"cuplug.fuse cannot trace {what}{user_line()}")


class Node:
    """One operation of the DAG: ``name`` (a row of the table, "where" or "_copy"), ``inputs``
    (per operand: (Node, output index) for arrays and results, ("scalar", slot) for scalars),
    the resolved :class:`~cuplug._codegen.ops.Plan`. Leaves (the array arguments) have
    ``name`` None and ``arg`` their position."""

    __slots__ = ("arg", "inputs", "name", "plan", "results")

    def __init__(self, name, inputs, plan, results, arg=None):
        self.name, self.inputs, self.plan, self.results, self.arg = (
            name,
            inputs,
            plan,
            results,
            arg,
        )


class Trace:
    """The DAG of one trace: ``nodes`` in creation (topological) order; ``scalars``: per scalar
    slot (arguments -> its value, the dtype it is passed in);
    ``checks``: scalar slots a kernel cannot check (integer power's negative exponents)."""

    def __init__(self):
        self.nodes = []
        self.scalars = []
        self.checks = []

    def leaf(self, arg, dtype, ndim):
        node = Node(None, (), None, (np.dtype(dtype),), arg)
        self.nodes.append(node)
        return Proxy(self, node, 0, ndim)

    def scalar_arg(self, arg, value):
        return ScalarArg(lambda args: args[arg], value)

    def op(self, name, operands, out_dtype=None):
        types, inputs, ndim = [], [], 0
        for x in operands:
            if isinstance(x, Proxy):
                if x._trace is not self:
                    _refuse("a value of another fused call")
                types.append(x.dtype)
                ndim = max(ndim, x.ndim)
            else:
                types.append(_scalar_type(x.value if isinstance(x, ScalarArg) else x))
        p = _ops.plan(name, types, out_dtype)
        for k, x in enumerate(operands):
            if isinstance(x, Proxy):
                inputs.append((x._node, x._k))
            else:
                get = x.get if isinstance(x, ScalarArg) else (lambda args, c=x: c)
                self.scalars.append((get, p.loop_in[k]))
                inputs.append(("scalar", len(self.scalars) - 1))
        if name == "power" and p.loop_in[1].kind in "iu" and inputs[1][0] == "scalar":
            self.checks.append(inputs[1][1])
        node = Node(p.row.name if p.row is not None else name, tuple(inputs), p, p.results)
        self.nodes.append(node)
        outs = tuple(Proxy(self, node, k, ndim) for k in range(len(p.results)))
        return outs[0] if len(outs) == 1 else outs


class Traced:
    """A value inside a trace (:class:`Proxy` or :class:`ScalarArg`)."""

    __slots__ = ()


class ScalarArg(Traced):
    """A scalar argument of the fused function, or a host expression of scalar arguments
    (``a + 1``): computed in Python at each call, as the unfused code computes it. ``get``:
    the arguments -> the value; ``value``: the value of the trace (its type decides dtypes)."""

    __slots__ = ("get", "value")
    __array_ufunc__ = None
    __hash__ = None

    def __init__(self, get, value):
        self.get, self.value = get, value

    def __bool__(self):
        _refuse("the truth value of a scalar argument (Python if/and/or/not on it)")

    def __float__(self):
        _refuse("float() of a scalar argument")

    def __int__(self):
        _refuse("int() of a scalar argument")

    def __index__(self):
        _refuse("a scalar argument used as an index or size")

    def __neg__(self):
        return _host(operator.neg, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _host(operator.abs, self)


def _host(fn, *xs):
    """A host expression of scalars (at least one a ScalarArg)."""
    gets = [x.get if isinstance(x, ScalarArg) else (lambda args, c=x: c) for x in xs]
    value = fn(*(x.value if isinstance(x, ScalarArg) else x for x in xs))
    _scalar_type(value)
    return ScalarArg(lambda args: fn(*(g(args) for g in gets)), value)


def _scalar_type(x):
    """What ops.plan takes for a scalar: the Python type (weak) or the NumPy scalar's dtype."""
    if isinstance(x, np.generic):
        return x.dtype
    for t in (bool, int, float, complex):
        if isinstance(x, t):
            return t
    _refuse(f"an operand of type {type(x).__name__} (operands are GPUArrays or scalars)")


def apply(name, operands, out=None):
    """The traced result of operation ``name`` when an operand is a proxy; None otherwise (the
    caller re-raises its own error). Entry point for cumath and gpuarray's routines."""
    trace = next((x._trace for x in operands if isinstance(x, Proxy)), None)
    if trace is None:
        return None
    if out is not None:
        _refuse(f"out= of {name}() in a fused function (return the result instead)")
    ops = []
    for x in operands:
        if isinstance(x, _ArrayBase):
            _refuse("a GPUArray that is not an argument of the fused function")
        if isinstance(x, np.ndarray) and x.ndim == 0:
            x = x[()]
        if not isinstance(x, (Traced, *_SCALARS)):
            _refuse(f"{name}() of a {type(x).__name__}")
        ops.append(x)
    return trace.op(name, ops)


def _binary(name, pyop, reflected=False):
    def f(self, other):
        if isinstance(other, _ArrayBase):
            _refuse("a GPUArray that is not an argument of the fused function")
        if not isinstance(other, (Traced, *_SCALARS)):
            return NotImplemented
        if isinstance(self, ScalarArg) and not isinstance(other, Proxy):
            return _host(pyop, other, self) if reflected else _host(pyop, self, other)
        trace = self._trace if isinstance(self, Proxy) else other._trace
        return trace.op(name, (other, self) if reflected else (self, other))

    return f


class Proxy(Traced):
    """A GPUArray argument or intermediate result inside a trace: its ``dtype`` and ``ndim``
    are known, its values are not."""

    __slots__ = ("_k", "_node", "_trace", "ndim")
    __hash__ = None

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy's ufuncs (``np.exp(x)``, ``np.float32(2) * x``): the table's row of the ufunc,
        as cuplug's __array_ufunc__ maps them; other methods and keywords are refused."""
        if method != "__call__" or kwargs:
            _refuse(f"numpy.{ufunc.__name__}.{method} with keywords {sorted(kwargs)}")
        name = _UFUNCS.get(ufunc)
        if name is None:
            _refuse(f"numpy.{ufunc.__name__} (no cuplug operation)")
        return apply(name, inputs)

    def __init__(self, trace, node, k, ndim):
        self._trace, self._node, self._k, self.ndim = trace, node, k, ndim

    @property
    def dtype(self):
        """The dtype the unfused computation gives this value."""
        return self._node.results[self._k]

    def astype(self, dtype):
        """The value cast to ``dtype`` (NumPy's unsafe cast), as ``GPUArray.astype``.

        Parameters
        ----------
        dtype : numpy.dtype
            The new dtype.
        """
        return self._trace.op("_copy", (self,), np.dtype(dtype))

    def __getattr__(self, name):
        if name.startswith("__"):  # protocols probed by NumPy and Python: not supported
            raise AttributeError(name)
        _refuse(f"GPUArray attribute .{name}")

    def __bool__(self):
        _refuse("the truth value of a GPUArray (Python if/and/or/not on a traced value)")

    def __float__(self):
        _refuse("float() of a GPUArray")

    def __int__(self):
        _refuse("int() of a GPUArray")

    def __complex__(self):
        _refuse("complex() of a GPUArray")

    def __index__(self):
        _refuse("a GPUArray used as an index or size")

    def __len__(self):
        _refuse("len() of a GPUArray")

    def __iter__(self):
        _refuse("iterating over a GPUArray")

    def __getitem__(self, key):
        _refuse("indexing a GPUArray")

    def __setitem__(self, key, value):
        _refuse("assigning into a GPUArray")

    def __neg__(self):
        return self._trace.op("negative", (self,))

    def __pos__(self):
        return self  # PyCUDA: +x is x

    def __abs__(self):
        return self._trace.op("absolute", (self,))

    def __invert__(self):
        return self._trace.op("invert", (self,))

    def __repr__(self):
        return f"<cuplug.fuse traced value {self.dtype} ndim={self.ndim}>"


for _name, _op in (
    ("add", "add"),
    ("sub", "subtract"),
    ("mul", "multiply"),
    ("truediv", "true_divide"),
    ("floordiv", "floor_divide"),
    ("mod", "remainder"),
    ("pow", "power"),
    ("and", "bitwise_and"),
    ("or", "bitwise_or"),
    ("xor", "bitwise_xor"),
    ("lshift", "left_shift"),
    ("rshift", "right_shift"),
):
    _py = getattr(operator, {"and": "and_", "or": "or_"}.get(_name, _name))
    for _cls in (Proxy, ScalarArg):
        setattr(_cls, f"__{_name}__", _binary(_op, _py))
        setattr(_cls, f"__r{_name}__", _binary(_op, _py, reflected=True))
        setattr(_cls, f"__i{_name}__", _binary(_op, _py))  # x += y rebinds the name: no write
for _name, _op in (
    ("lt", "less"),
    ("le", "less_equal"),
    ("gt", "greater"),
    ("ge", "greater_equal"),
    ("eq", "equal"),
    ("ne", "not_equal"),
):
    for _cls in (Proxy, ScalarArg):
        setattr(_cls, f"__{_name}__", _binary(_op, getattr(operator, _name)))
del _name, _op, _py, _cls
