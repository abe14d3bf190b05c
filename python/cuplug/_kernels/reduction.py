"""PyCUDA's ``pycuda.reduction`` (cuplug.reduction re-exports it): ReductionKernel and the
kernel factories behind GPUArray's whole-array reductions (sum, dot, min, max, their subset
forms, any, all).

``ReductionKernel(np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]*y[i]",
arguments="const float *x, const float *y")(x, y)`` returns a 0-d GPUArray. The kernels come
from cuplug._codegen.reduction: stage 1 over a fixed split of the input (a function of its size
and the device), stage 2 over the partial values, or one block for short inputs. Float results
are therefore the same bits on every run. Vectors are contiguous (C or Fortran order, read in
memory order as ``x[i]``), as in PyCUDA.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cuplug import _core, _dtypes
from cuplug._codegen import reduction as _rg
from cuplug._codegen.names import is_c_identifier
from cuplug._compile.source_module import SourceModule
from cuplug._driver import context_cache
from cuplug._kernels.cargs import ScalarArg, VectorArg, parse_arguments
from cuplug._kernels.engine import pch_options
from cuplug._kernels.results import empty as _empty

if TYPE_CHECKING:
    from cuplug._array.core import GPUArray

__all__ = [
    "ReductionKernel",
    "ScalarArg",
    "VectorArg",
    "get_dot_kernel",
    "get_minmax_kernel",
    "get_minmax_neutral",
    "get_subset_dot_kernel",
    "get_subset_minmax_kernel",
    "get_subset_sum_kernel",
    "get_sum_kernel",
]

#: Inputs up to this many elements are reduced by one block in one launch.
SINGLE_BLOCK_MAX = 4096


def _is_array(x):
    return hasattr(x, "gpudata") and hasattr(x, "dtype") and hasattr(x, "shape")


def _check_dtype(name, arg, x):
    """TypeError unless `x` holds the element type `arg` declares, as ElementwiseKernel checks:
    the kernel reads the memory as the declared type, so another dtype gives wrong values (or
    reads past the array, when wider)."""
    declared = np.dtype(arg.dtype)
    if declared.kind in "biufcmM" or declared.fields is None:
        ok = x.dtype == declared
    else:  # struct and vector types: any dtype of the same size, as the elementwise engine
        ok = x.dtype.itemsize == declared.itemsize
    if not ok:
        raise TypeError(
            f"{name}(): argument {arg.name!r} must be a {declared} array, got {x.dtype} array"
        )


class ReductionKernel:
    """PyCUDA's ReductionKernel. ``acc_dtype`` (beyond PyCUDA): the type values are combined
    in, when wider than ``dtype_out`` (the result is converted once at the end)."""

    def __init__(
        self,
        dtype_out,
        neutral,
        reduce_expr,
        map_expr=None,
        arguments=None,
        name="reduce_kernel",
        keep=False,
        options=None,
        preamble="",
        allocator=None,
        acc_dtype=None,
    ):
        if arguments is None:
            raise TypeError("ReductionKernel: arguments= is required (e.g. 'const float *in')")
        self.dtype_out = np.dtype(dtype_out)
        self.acc_dtype = self.dtype_out if acc_dtype is None else np.dtype(acc_dtype)
        self.arguments = parse_arguments(arguments, taken=("i", "n"))
        self._vectors = [k for k, a in enumerate(self.arguments) if isinstance(a, VectorArg)]
        if not self._vectors:
            raise ValueError(
                f"ReductionKernel {name!r}: needs at least one vector (pointer) argument, to take "
                f"the size from; got {arguments!r}"
            )
        if map_expr is None:
            map_expr = f"{self.arguments[self._vectors[0]].name}[i]"
        if not is_c_identifier(name):
            raise ValueError(f"ReductionKernel: name {name!r} is not a C identifier")
        self.name = name
        self.neutral = str(neutral)
        self.reduce_expr = reduce_expr
        self.map_expr = map_expr
        self.keep = keep
        self.options = list(options or [])
        self.preamble = preamble
        self.allocator = allocator
        args = [_rg.Arg(a.name, a.dtype, isinstance(a, VectorArg)) for a in self.arguments]
        self.source = _rg.generate(
            args,
            self.dtype_out,
            self.neutral,
            reduce_expr,
            map_expr,
            name,
            preamble,
            acc_dtype=self.acc_dtype,
        )
        self._functions_for_current_context()  # PyCUDA compiles eagerly: errors show here

    def _functions_for_current_context(self):
        ctx = _core.Context.get_current(adopt=True)
        # Per live context (context_cache): they go with it, and with this kernel.
        mine = context_cache.per_object(ctx, "ReductionKernel")
        entry = mine.get(self)
        if entry is None:
            options = self.options
            if "cuda/std/complex" in self.source:
                options = options + pch_options()
            mod = SourceModule(self.source, no_extern_c=True, options=options, keep=self.keep)
            chars = "".join(a.struct_char for a in self.arguments)
            stage1 = mod.get_function(f"{self.name}_stage1")
            stage1.prepare("P" + chars + "QQ")
            final = mod.get_function(f"{self.name}_final")
            final.prepare("P" + chars + "Q")
            stage2 = mod.get_function(f"{self.name}_stage2")
            stage2.prepare("PPQ")
            sms = ctx.get_device().get_attribute(_core.device_attribute.MULTIPROCESSOR_COUNT)
            entry = mine[self] = (stage1, final, stage2, 8 * sms)
        return entry

    def __call__(
        self, *args, stream=None, out=None, allocator=None, kernel_wrapper=None
    ) -> GPUArray:
        if kernel_wrapper is not None:
            raise TypeError("ReductionKernel: kernel_wrapper= is not supported by cuplug")
        if len(args) != len(self.arguments):
            raise TypeError(
                f"{self.name}() takes {len(self.arguments)} arguments "
                f"({', '.join(a.name for a in self.arguments)}), got {len(args)}"
            )
        _core._array._check_same_device(self.name, *args)
        values = []
        first = None
        for a, x in zip(self.arguments, args):
            if isinstance(a, VectorArg):
                if not _is_array(x):
                    raise TypeError(
                        f"{self.name}(): argument {a.name!r} must be a GPUArray, got "
                        f"{type(x).__name__}"
                    )
                _check_dtype(self.name, a, x)
                if x.size and not (x.flags.c_contiguous or x.flags.f_contiguous):
                    raise ValueError(
                        f"{self.name}(): argument {a.name!r} must be contiguous (strides "
                        f"{x.strides}); copy it first (x.copy())"
                    )
                if first is None:
                    first = x
                # The array itself: the packer refuses freed memory and a destroyed context's
                # (a view's gpudata is a bare address).
                values.append(x if x.size else 0)
            else:
                values.append(x)
        n = first.size
        alloc = allocator or self.allocator or first.allocator
        if out is None:
            out = _empty((), self.dtype_out, allocator=alloc)
        else:
            if not _is_array(out) or out.dtype != self.dtype_out or out.size != 1:
                raise ValueError(
                    f"{self.name}(): out= must be a GPUArray of one {self.dtype_out} element, got "
                    + (
                        f"{out.dtype} of shape {out.shape}"
                        if _is_array(out)
                        else type(out).__name__
                    )
                )
        stage1, final, stage2, max_blocks = self._functions_for_current_context()
        if n <= SINGLE_BLOCK_MAX:
            final.prepared_async_call((1, 1), (_rg.BLOCK, 1, 1), stream, out, *values, n)
            return out
        blocks, chunk = _rg.split(n, max_blocks)
        partial = _empty((blocks,), self.acc_dtype, allocator=alloc)
        stage1.prepared_async_call(
            (blocks, 1), (_rg.BLOCK, 1, 1), stream, partial.gpudata, *values, chunk, n
        )
        stage2.prepared_async_call((1, 1), (_rg.BLOCK, 1, 1), stream, out, partial.gpudata, blocks)
        return out


# ---- the kernels of GPUArray's reductions -------------------------------------------------------

_cache = {}


def _cached(key, make):
    kernel = _cache.get(key)
    if kernel is None:
        kernel = _cache[key] = make()
    return kernel


def _ct(dtype):
    return _dtypes.ctype(dtype)


def _acc_for(dtype_out):
    """cuplug's own float sums accumulate in double (complex: complex128): results at least as
    accurate as NumPy's pairwise summation, at no cost in a memory-bound kernel."""
    dtype_out = np.dtype(dtype_out)
    if dtype_out.kind == "f" and dtype_out.itemsize < 8:
        return np.dtype(np.float64)
    if dtype_out.kind == "c" and dtype_out.itemsize < 16:
        return np.dtype(np.complex128)
    return dtype_out


def _tag(*dtypes):
    return "_".join(_dtypes.tag(d) for d in dtypes)


def get_sum_kernel(dtype_out, dtype_in):
    """PyCUDA's sum kernel: ``kernel(a)`` sums the elements of ``a``.

    Parameters
    ----------
    dtype_out : numpy.typing.DTypeLike | None
        The result's type; None: ``dtype_in``.
    dtype_in : numpy.typing.DTypeLike
        The input's element type.

    Returns
    -------
    ReductionKernel
        The kernel, cached per dtypes (built once per process).
    """
    dtype_out = np.dtype(dtype_out if dtype_out is not None else dtype_in)
    dtype_in = np.dtype(dtype_in)
    return _cached(
        ("sum", dtype_out, dtype_in),
        lambda: ReductionKernel(
            dtype_out,
            "0",
            "a+b",
            "(acc_type)in[i]",
            [VectorArg(dtype_in, "in")],
            name=f"cuplug_sum_{_tag(dtype_out, dtype_in)}",
            acc_dtype=_acc_for(dtype_out),
        ),
    )


def get_subset_sum_kernel(dtype_out, dtype_subset, dtype_in):
    """PyCUDA's subset sum kernel: ``kernel(subset, a)`` sums ``a[subset]``.

    Parameters
    ----------
    dtype_out : numpy.typing.DTypeLike
        The result's type.
    dtype_subset : numpy.typing.DTypeLike
        The index array's integer type.
    dtype_in : numpy.typing.DTypeLike
        The input's element type.

    Returns
    -------
    ReductionKernel
        The kernel, cached per dtypes (built once per process).
    """
    dtype_out, dtype_subset, dtype_in = map(np.dtype, (dtype_out, dtype_subset, dtype_in))
    return _cached(
        ("subset_sum", dtype_out, dtype_subset, dtype_in),
        lambda: ReductionKernel(
            dtype_out,
            "0",
            "a+b",
            "(acc_type)in[lookup_tbl[i]]",
            [VectorArg(dtype_subset, "lookup_tbl"), VectorArg(dtype_in, "in")],
            name=f"cuplug_subset_sum_{_tag(dtype_out, dtype_subset, dtype_in)}",
            acc_dtype=_acc_for(dtype_out),
        ),
    )


def get_dot_kernel(dtype_out, dtype_a=None, dtype_b=None):
    """PyCUDA's dot kernel: ``kernel(a, b)`` is the sum of ``a * b`` (``conj(a)`` when complex).

    Parameters
    ----------
    dtype_out : numpy.typing.DTypeLike
        The result's type.
    dtype_a, dtype_b : numpy.typing.DTypeLike, optional
        The inputs' element types; None: ``dtype_out``.

    Returns
    -------
    ReductionKernel
        The kernel, cached per dtypes (built once per process).
    """
    dtype_out = np.dtype(dtype_out)
    dtype_a = np.dtype(dtype_a if dtype_a is not None else dtype_out)
    dtype_b = np.dtype(dtype_b if dtype_b is not None else dtype_a)
    return _cached(
        ("dot", dtype_out, dtype_a, dtype_b),
        lambda: ReductionKernel(
            dtype_out,
            "0",
            "a+b",
            "(acc_type)a[i]*(acc_type)b[i]",
            [VectorArg(dtype_a, "a"), VectorArg(dtype_b, "b")],
            name=f"cuplug_dot_{_tag(dtype_out, dtype_a, dtype_b)}",
            acc_dtype=_acc_for(dtype_out),
        ),
    )


def get_subset_dot_kernel(dtype_out, dtype_subset, dtype_a=None, dtype_b=None):
    """PyCUDA's subset dot kernel: ``kernel(subset, a, b)`` is the dot of ``a[subset]`` and
    ``b[subset]``.

    Parameters
    ----------
    dtype_out : numpy.typing.DTypeLike
        The result's type.
    dtype_subset : numpy.typing.DTypeLike
        The index array's integer type.
    dtype_a, dtype_b : numpy.typing.DTypeLike, optional
        The inputs' element types; None: ``dtype_out``.

    Returns
    -------
    ReductionKernel
        The kernel, cached per dtypes (built once per process).
    """
    dtype_out, dtype_subset = np.dtype(dtype_out), np.dtype(dtype_subset)
    dtype_a = np.dtype(dtype_a if dtype_a is not None else dtype_out)
    dtype_b = np.dtype(dtype_b if dtype_b is not None else dtype_a)
    return _cached(
        ("subset_dot", dtype_out, dtype_subset, dtype_a, dtype_b),
        lambda: ReductionKernel(
            dtype_out,
            "0",
            "a+b",
            "(acc_type)a[lookup_tbl[i]]*(acc_type)b[lookup_tbl[i]]",
            [
                VectorArg(dtype_subset, "lookup_tbl"),
                VectorArg(dtype_a, "a"),
                VectorArg(dtype_b, "b"),
            ],
            name=f"cuplug_subset_dot_{_tag(dtype_out, dtype_subset, dtype_a, dtype_b)}",
            acc_dtype=_acc_for(dtype_out),
        ),
    )


#: (+inf, -inf) as C expressions, by float size.
_FLOAT_INFINITY = {
    2: ("__ushort_as_half(0x7c00)", "__ushort_as_half(0xfc00)"),
    4: ("__int_as_float(0x7f800000)", "__int_as_float(0xff800000)"),
    8: ("__longlong_as_double(0x7ff0000000000000LL)", "__longlong_as_double(0xfff0000000000000LL)"),
}


def get_minmax_neutral(what, dtype):
    """The C expression of min's (max's) identity for dtype: its largest (smallest) value.

    Parameters
    ----------
    what : str
        'min' or 'max'.
    dtype : numpy.typing.DTypeLike
        The element type.

    Returns
    -------
    str
        The C expression.
    """
    dtype = np.dtype(dtype)
    if what not in ("min", "max"):
        raise ValueError(f"what must be 'min' or 'max', got {what!r}")
    if dtype.kind == "f":
        # NumPy's min/max of floats: the infinities are the identities (NaN wins anyway).
        return _FLOAT_INFINITY[dtype.itemsize][what == "max"]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        value = info.max if what == "min" else info.min
        ct = _ct(dtype)
        if value == np.iinfo(np.int64).min:
            return f"({ct})(-9223372036854775807LL - 1)"
        return f"({ct})({value}{'ULL' if dtype.kind == 'u' else 'LL'})"
    if dtype.kind == "b":
        return "true" if what == "min" else "false"
    raise TypeError(f"{what}: not defined for {dtype} (real numbers and integers only)")


def get_minmax_kernel(what, dtype):
    """PyCUDA's min / max kernel: ``kernel(a)`` is the smallest or largest element.

    Parameters
    ----------
    what : str
        'min' or 'max'.
    dtype : numpy.typing.DTypeLike
        The element type.

    Returns
    -------
    ReductionKernel
        The kernel, cached per dtypes (built once per process).
    """
    dtype = np.dtype(dtype)
    return _cached(
        (what, dtype),
        lambda: ReductionKernel(
            dtype,
            get_minmax_neutral(what, dtype),
            _minmax_expr(what, dtype),
            "in[i]",
            [VectorArg(dtype, "in")],
            name=f"cuplug_{what}_{_tag(dtype)}",
        ),
    )


def get_subset_minmax_kernel(what, dtype, dtype_subset):
    """PyCUDA's subset min / max kernel: ``kernel(subset, a)`` over ``a[subset]``.

    Parameters
    ----------
    what : str
        'min' or 'max'.
    dtype : numpy.typing.DTypeLike
        The element type.
    dtype_subset : numpy.typing.DTypeLike
        The index array's integer type.

    Returns
    -------
    ReductionKernel
        The kernel, cached per dtypes (built once per process).
    """
    dtype, dtype_subset = np.dtype(dtype), np.dtype(dtype_subset)
    return _cached(
        ("subset_" + what, dtype, dtype_subset),
        lambda: ReductionKernel(
            dtype,
            get_minmax_neutral(what, dtype),
            _minmax_expr(what, dtype),
            "in[lookup_tbl[i]]",
            [VectorArg(dtype_subset, "lookup_tbl"), VectorArg(dtype, "in")],
            name=f"cuplug_subset_{what}_{_tag(dtype, dtype_subset)}",
        ),
    )


def _minmax_expr(what, dtype):
    op = "<" if what == "min" else ">"
    if np.dtype(dtype).kind == "f":
        # NaN propagates (NumPy's min/max): a NaN on either side is the result.
        return f"(a != a) ? a : ((b != b) ? b : ((b {op} a) ? b : a))"
    return f"(b {op} a) ? b : a"
