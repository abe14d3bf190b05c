"""NumPy's functions on GPU arrays (NEP 13 ``__array_ufunc__``, NEP 18 ``__array_function__``).

``np.sin(g)``, ``np.add(g, 1, out=h)``, ``np.sum(g, axis=0)``, ``np.concatenate([g, h])``,
``np.where(c, g, h)`` run cuplug's kernels and return GPUArrays, as the matching cuplug routine
would. A ufunc is one row of the operation table (cuplug._codegen.ops), so ``np.sin(g)``,
``cumath.sin(g)`` and the operators run the same kernel; ``reduce`` and ``accumulate`` of
``add``, ``multiply``, ``maximum``, ``minimum``, ``logical_and`` and ``logical_or`` are cuplug's
reductions and scans. What is not implemented raises TypeError naming the NumPy function, and a
host ``numpy.ndarray`` operand is refused, never copied to the device (or a GPUArray to the host)
behind the caller's back: ``np.asarray(g)`` and ``g.get()`` are the explicit ways to the host.
"""

from __future__ import annotations

import numpy as np

from cuplug._codegen import ops as _ops

from .creation import (
    empty_like as _cr_empty_like,
)
from .creation import (
    ones_like as _cr_ones_like,
)
from .creation import (
    zeros_like as _cr_zeros_like,
)
from .cumulative import (
    cumprod as _cu_cumprod,
)
from .cumulative import (
    cumsum as _cu_cumsum,
)
from .manipulation import (
    concatenate as _mp_concatenate,
)
from .manipulation import (
    stack as _mp_stack,
)
from .manipulation import (
    take as _mp_take,
)
from .manipulation import (
    transpose as _mp_transpose,
)
from .math import (
    apply as _mt_apply,
)
from .math import (
    clip as _mt_clip,
)
from .math import (
    where as _mt_where,
)
from .reductions import (
    all as _rd_all,
)
from .reductions import (
    any as _rd_any,
)
from .reductions import (
    argmax as _rd_argmax,
)
from .reductions import (
    argmin as _rd_argmin,
)
from .reductions import (
    dot as _rd_dot,
)
from .reductions import (
    max as _rd_max,
)
from .reductions import (
    mean as _rd_mean,
)
from .reductions import (
    min as _rd_min,
)
from .reductions import (
    nanmax as _rd_nanmax,
)
from .reductions import (
    nanmean as _rd_nanmean,
)
from .reductions import (
    nanmin as _rd_nanmin,
)
from .reductions import (
    nanprod as _rd_nanprod,
)
from .reductions import (
    nanstd as _rd_nanstd,
)
from .reductions import (
    nansum as _rd_nansum,
)
from .reductions import (
    nanvar as _rd_nanvar,
)
from .reductions import (
    prod as _rd_prod,
)
from .reductions import (
    std as _rd_std,
)
from .reductions import (
    sum as _rd_sum,
)
from .reductions import (
    var as _rd_var,
)
from .reductions import (
    vdot as _rd_vdot,
)

__all__ = ["NumpyProtocolsMixin"]

# ---- ufuncs ----------------------------------------------------------------------------------

#: NumPy ufunc -> the operation table's row name.
_UFUNCS = {row.ufunc: row.name for row in _ops.TABLE if row.ufunc is not None}
_UFUNCS.setdefault(np.degrees, "rad2deg")
_UFUNCS.setdefault(np.radians, "deg2rad")

#: Binary ufuncs whose reflected operator the array has: ``np.float32(2) * g`` reaches
#: __array_ufunc__ with the scalar first, and the operator's C++ path answers it.
_REFLECTED = {
    np.add: "__radd__",
    np.subtract: "__rsub__",
    np.multiply: "__rmul__",
    np.true_divide: "__rtruediv__",
    np.floor_divide: "__rfloordiv__",
    np.remainder: "__rmod__",
    np.power: "__rpow__",
    np.bitwise_and: "__rand__",
    np.bitwise_or: "__ror__",
    np.bitwise_xor: "__rxor__",
    np.left_shift: "__rlshift__",
    np.right_shift: "__rrshift__",
}

#: ufunc.reduce / ufunc.accumulate as cuplug's reductions and scans.
_REDUCE = {
    np.add: _rd_sum,
    np.multiply: _rd_prod,
    np.maximum: _rd_max,
    np.minimum: _rd_min,
    np.logical_and: _rd_all,
    np.logical_or: _rd_any,
}
_ACCUMULATE = {np.add: _cu_cumsum, np.multiply: _cu_cumprod}

_SCALARS = (bool, int, float, complex, np.generic)


def _is_gpu_array(x) -> bool:
    return hasattr(x, "_type_code") and hasattr(x, "gpudata")


def _refuse_host(where: str, x) -> None:
    raise TypeError(
        f"{where}: operand of type numpy.ndarray is in host memory; cuplug does not copy it "
        "to the device behind your back: pass gpuarray.to_gpu(x) (or a Python/NumPy scalar)"
    )


def _check_operands(where: str, operands) -> bool:
    """True when every operand is a GPUArray or a scalar; TypeError for a host array; False
    for a foreign type that may answer itself (NEP 13: return NotImplemented)."""
    for x in operands:
        if x is None or _is_gpu_array(x) or isinstance(x, _SCALARS):
            continue
        if isinstance(x, np.ndarray):
            if x.ndim == 0:
                continue  # a 0-d array is a scalar to NumPy's rules too
            _refuse_host(where, x)
        return False
    return True


def _unwrap_0d(operands):
    return tuple(x[()] if isinstance(x, np.ndarray) and x.ndim == 0 else x for x in operands)


def _require_numpy_loop(where: str, ufunc, inputs) -> None:
    """TypeError where NumPy has no loop for these operands (np.floor of a complex array, say):
    the operation table may know a wider set (PyCUDA's cumath does), but np.<ufunc> promises
    NumPy's answer, which is a refusal. NEP 50 scalars: Python int/float/complex stay weak."""
    sig = []
    for x in inputs:
        if _is_gpu_array(x) or isinstance(x, np.generic):
            sig.append(x.dtype)
        elif isinstance(x, bool):
            sig.append(np.dtype(np.bool_))
        else:
            sig.append(type(x))  # int, float or complex: weak, as NumPy's own scalars
    try:
        ufunc.resolve_dtypes((*sig, *(None,) * ufunc.nout))
    except TypeError as e:
        raise TypeError(f"{where}: {e}") from None


def _ufunc_call(self, ufunc, inputs, out, kwargs):
    where = f"numpy.{ufunc.__name__}"
    name = _UFUNCS.get(ufunc)
    if name is None:
        raise TypeError(f"{where} is not implemented for cuplug GPUArrays")
    if kwargs:
        raise TypeError(
            f"{where} on cuplug GPUArrays takes out= only, not {', '.join(sorted(kwargs))}"
        )
    if not _check_operands(where, (*inputs, *(out or ()))):
        return NotImplemented
    inputs = _unwrap_0d(inputs)
    _require_numpy_loop(where, ufunc, inputs)
    if (
        out is None
        and len(inputs) == 2
        and inputs[1] is self
        and not _is_gpu_array(inputs[0])
        and ufunc in _REFLECTED
    ):
        return getattr(self, _REFLECTED[ufunc])(inputs[0])
    if out is not None and ufunc.nout == 1:
        out = out[0]
    return _mt_apply(name, *inputs, out=out)


def _ufunc_method(ufunc, method, inputs, out, kwargs):
    where = f"numpy.{ufunc.__name__}.{method}"
    table = {"reduce": _REDUCE, "accumulate": _ACCUMULATE}.get(method, {})
    routine = table.get(ufunc)
    if routine is None or len(inputs) != 1:
        raise TypeError(f"{where} is not implemented for cuplug GPUArrays")
    (a,) = inputs
    if not _is_gpu_array(a):
        if isinstance(a, np.ndarray):
            _refuse_host(where, a)
        return NotImplemented
    if out is not None:
        kwargs["out"] = out[0]
    # NumPy's reduce defaults to axis 0; cuplug's routines to all axes (None).
    kwargs.setdefault("axis", 0)
    if ufunc in (np.maximum, np.minimum, np.logical_and, np.logical_or):
        dtype = kwargs.pop("dtype", None)
        if dtype is not None and np.dtype(dtype) != a.dtype:
            raise TypeError(f"{where} on cuplug GPUArrays takes no dtype= other than the array's")
    try:
        return routine(a, **kwargs)
    except TypeError as e:
        raise TypeError(f"{where} on cuplug GPUArrays: {e}") from None


# ---- functions -------------------------------------------------------------------------------


def _shape(a):
    return tuple(a.shape)


def _size(a, axis=None):
    return int(a.size) if axis is None else int(a.shape[axis])


def _as_dtype_or_value(x):
    return x.dtype if _is_gpu_array(x) else x


def _result_type(*arrays_and_dtypes):
    return np.result_type(*(_as_dtype_or_value(x) for x in arrays_and_dtypes))


def _can_cast(from_, to, casting="safe"):
    return np.can_cast(_as_dtype_or_value(from_), to, casting=casting)


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if copy is not None:
        raise TypeError("numpy.reshape on cuplug GPUArrays takes no copy= argument")
    return a.reshape(shape if shape is not None else newshape, order=order)


def _where(condition, *xy):
    if len(xy) != 2:
        raise TypeError(
            "numpy.where on cuplug GPUArrays needs three arguments (condition, x, y); "
            "the one-argument form (nonzero) is not implemented"
        )
    return _mt_where(condition, *xy)


def _dot(a, b, out=None):
    if out is not None or getattr(a, "ndim", 0) > 1 or getattr(b, "ndim", 0) > 1:
        raise TypeError(
            "numpy.dot on cuplug GPUArrays is the inner product of 1-D arrays; the matrix "
            "product (2-D operands) and out= are not implemented (use cuBLAS through CuPy or "
            "PyTorch on the same memory: docs/interop.md)"
        )
    return _rd_dot(a, b)


def _take(a, indices, axis=None, out=None, mode="raise"):
    if a.ndim != 1 or axis not in (None, 0) or mode != "raise":
        raise TypeError(
            "numpy.take on cuplug GPUArrays takes a 1-D array, axis None or 0 and mode 'raise'"
        )
    return _mp_take(a, indices, out=out)


def _copy(a, order="K", subok=False):
    if (order == "C" and not a.flags.c_contiguous) or (order == "F" and not a.flags.f_contiguous):
        raise TypeError(
            f"numpy.copy on cuplug GPUArrays keeps the array's layout; order={order!r} would "
            "change it (use a.copy() then reshape, or order='K')"
        )
    return a.copy()


def _ravel(a, order="C"):
    return a.ravel(order=order)


def _squeeze(a, axis=None):
    return a.squeeze(axis)


def _swapaxes(a, axis1, axis2):
    return a.swapaxes(axis1, axis2)


def _round(a, decimals=0, out=None):
    return a.round(decimals, out=out)


def _real(val):
    return val.real


def _imag(val):
    return val.imag


def _iscomplexobj(x):
    return x.dtype.kind == "c"


def _isrealobj(x):
    return x.dtype.kind != "c"


_FUNCTIONS = {
    # metadata: no device work
    np.shape: _shape,
    np.ndim: lambda a: a.ndim,
    np.size: _size,
    np.result_type: _result_type,
    np.can_cast: _can_cast,
    np.iscomplexobj: _iscomplexobj,
    np.isrealobj: _isrealobj,
    # creation from an array's shape and dtype
    np.empty_like: _cr_empty_like,
    np.zeros_like: _cr_zeros_like,
    np.ones_like: _cr_ones_like,
    # shape and layout
    np.reshape: _reshape,
    np.transpose: _mp_transpose,
    np.ravel: _ravel,
    np.squeeze: _squeeze,
    np.swapaxes: _swapaxes,
    np.copy: _copy,
    np.concatenate: _mp_concatenate,
    np.stack: _mp_stack,
    np.take: _take,
    np.real: _real,
    np.imag: _imag,
    # elementwise functions that are not ufuncs
    np.where: _where,
    np.clip: _mt_clip,
    np.round: _round,
    np.around: _round,
    # reductions and scans
    np.sum: _rd_sum,
    np.prod: _rd_prod,
    np.mean: _rd_mean,
    np.std: _rd_std,
    np.var: _rd_var,
    np.min: _rd_min,
    np.max: _rd_max,
    np.amin: _rd_min,
    np.amax: _rd_max,
    np.argmin: _rd_argmin,
    np.argmax: _rd_argmax,
    np.any: _rd_any,
    np.all: _rd_all,
    np.nansum: _rd_nansum,
    np.nanprod: _rd_nanprod,
    np.nanmean: _rd_nanmean,
    np.nanstd: _rd_nanstd,
    np.nanvar: _rd_nanvar,
    np.nanmin: _rd_nanmin,
    np.nanmax: _rd_nanmax,
    np.cumsum: _cu_cumsum,
    np.cumprod: _cu_cumprod,
    np.dot: _dot,
    np.vdot: _rd_vdot,
}


class NumpyProtocolsMixin:
    """``__array_ufunc__`` and ``__array_function__`` of GPUArray (module docstring)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy's ufuncs on GPU arrays (NEP 13): ``np.sin(g)``, ``np.add(g, 1, out=h)``,
        ``np.add.reduce(g, axis=0)``, ``np.multiply.accumulate(g)``.

        Parameters
        ----------
        ufunc : numpy.ufunc
            The ufunc called.
        method : str
            ``"__call__"``, ``"reduce"`` or ``"accumulate"`` (others raise TypeError).
        *inputs
            GPUArrays and scalars; a host ``numpy.ndarray`` raises TypeError.
        **kwargs
            ``out=`` (GPUArrays); for reduce and accumulate also the routine's ``axis``,
            ``dtype``, ``keepdims``.
        """
        out = kwargs.pop("out", None)
        if method == "__call__":
            return _ufunc_call(self, ufunc, inputs, out, kwargs)
        return _ufunc_method(ufunc, method, inputs, out, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy's functions on GPU arrays (NEP 18): ``np.sum``, ``np.concatenate``,
        ``np.where``, ``np.reshape``, ... run as cuplug's routines.

        Parameters
        ----------
        func : callable
            The NumPy function called.
        types : collection of type
            The argument types that implement ``__array_function__``.
        args : tuple
            Its positional arguments.
        kwargs : dict
            Its keyword arguments.
        """
        impl = _FUNCTIONS.get(func)
        name = getattr(func, "__name__", str(func))
        if impl is None:
            raise TypeError(f"numpy.{name} is not implemented for cuplug GPUArrays")
        for t in types:
            if issubclass(t, np.ndarray):
                raise TypeError(
                    f"numpy.{name}: an operand is a numpy.ndarray in host memory; cuplug does "
                    "not copy it to the device behind your back: pass gpuarray.to_gpu(x)"
                )
            if not issubclass(t, NumpyProtocolsMixin):
                return NotImplemented
        return impl(*args, **kwargs)
