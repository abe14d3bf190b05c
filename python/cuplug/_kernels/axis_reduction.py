"""NumPy's reductions over axes on GPUArrays, the running half (the engine behind gpuarray.sum/
prod/min/max/argmin/argmax/any/all/mean/var/std and the nan forms, and their GPUArray methods):
:func:`reduce` resolves the arguments and plans the launches for a layout
(cuplug._kernels.axis_reduction_plan, pure), compiles the kernels it needs and runs the plan.

A call is looked up by (reduction, dtype, shape, strides, address alignment, arguments) in the
current context's plans (cuplug._driver.context_cache), so a repeated reduction costs one dict
lookup, the result's allocation and its launches. The kernels are cuplug._codegen.axis_reduction's,
one entry per module, compiled on first use (compile cache on disk) and kept per context with the
plans: they go with the context.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from cuplug import _core
from cuplug._codegen import axis_reduction as _ar
from cuplug._compile.source_module import SourceModule
from cuplug._driver import context_cache
from cuplug._kernels.axis_reduction_plan import (
    _ARG,
    _MOMENTS,
    _NO_IDENTITY,
    TooManyDims,
    normalize_axis,
    plan_launches,
    resolve_dtypes,
    result_shape,
)
from cuplug._kernels.engine import Arg, _compile_options
from cuplug._kernels.results import compact_strides, result_class

__all__ = ["PLAN_CACHE_SIZE", "reduce"]

_ArrayBase = _core._array.ArrayBase
_apply = _core._array.apply
_current_context = _core.Context.get_current
_MULTIPROCESSOR_COUNT = _core.device_attribute.MULTIPROCESSOR_COUNT


# ---- running -----------------------------------------------------------------------------------

_PTRS = struct.Struct("=QQ")
_BLOCK = (_ar.BLOCK, 1, 1)
_reduce_launch = _core._array.reduce_launch
_reduce_fast = _core._array.reduce_fast
_reduce_fast_register = _core._array.reduce_fast_register
_U8 = np.dtype(np.uint8)
_FORMAT = f"{_ar.PARAMS.size}s"


_specs = {}
# Per context (cuplug._driver.context_cache): ("axis fn", spec name, entry kind) -> Function,
# "axis plans" -> {key: _Plan}, "multiprocessors" -> int.
_PLANS = "axis plans"
#: Plans kept before the cache starts over (each is a few hundred bytes).
PLAN_CACHE_SIZE = 4096


def _spec(kind, x, c, res, o):
    key = (kind, x, c, res, o)
    sp = _specs.get(key)
    if sp is None:
        sp = _specs[key] = _ar.spec(kind, x, c, res, o)
    return sp


def _functions_for(ctx, sp, kinds):
    """The loaded entries (kind -> Function) of sp for this context: those not loaded yet are
    compiled together, one NVRTC program (a plan's launches need one or two kinds)."""
    cached = context_cache.entries(ctx)
    found, missing = {}, []
    for kind in kinds:
        hit = cached.get(("axis fn", sp.name, kind))
        if hit is not None:
            found[kind] = hit
        else:
            missing.append(kind)
    if not missing:
        return found
    source = _ar.generate(sp, tuple(missing))
    options = _compile_options([Arg("x", d, True) for d in sp.dtypes], None, True)
    module = SourceModule(source, no_extern_c=True, options=options)
    for kind in missing:
        fn = module.get_function(_ar.entry(sp.name, kind))
        fn.prepare(_FORMAT)
        cached[("axis fn", sp.name, kind)] = fn
        found[kind] = fn
    return found


def _multiprocessors(ctx):
    def count():
        return ctx.get_device().get_attribute(_MULTIPROCESSOR_COUNT)

    return context_cache.lookup(ctx, "multiprocessors", count)


class _Plan:
    """What one (reduction, layout, arguments) runs: the result's shape/strides/dtype, the
    launches with their functions and packed parameter tails, the temporaries' sizes."""

    __slots__ = ("ctx", "shape", "strides", "dtype", "launches", "temps", "single")

    def run(self, a, out, stream, allocator):
        alloc = allocator if allocator is not None else a.allocator
        if out is None:
            out = result_class()(self.shape, self.dtype, alloc, None, None, self.strides)
        temps = [result_class()((n,), _U8, alloc) for n in self.temps]
        ptrs = {"in": a.ptr, "out": out.ptr}
        for L in self.launches:
            src = ptrs[L.src] if isinstance(L.src, str) else temps[L.src].ptr
            dst = ptrs[L.dst] if isinstance(L.dst, str) else temps[L.dst].ptr
            L.fn.prepared_async_call(
                (L.grid, 1), _BLOCK, stream, _PTRS.pack(dst + L.dst_off, src + L.src_off) + L.tail
            )
        return out


def _make_plan(ctx, kind, a, axis, dtype, out, keepdims, ddof):
    axes = normalize_axis(axis, a.ndim, kind)
    compute, result = resolve_dtypes(kind, a.dtype, dtype, None if out is None else out.dtype)
    shape = result_shape(a.shape, axes, keepdims)
    reduced = math.prod(a.shape[k] for k in axes)
    if reduced == 0 and kind in _NO_IDENTITY:
        name = _NO_IDENTITY[kind]
        if name is None:
            raise ValueError(f"attempt to get {kind} of an empty sequence")
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    if out is not None:
        if not isinstance(out, _ArrayBase):
            raise TypeError(f"{kind}: out= must be a GPUArray, got {type(out).__name__}")
        if out.shape != shape:
            raise ValueError(
                f"{kind}: out= has shape {out.shape}, the result has shape {shape} (axis="
                f"{axis!r}, keepdims={keepdims}); pass an array of that shape"
            )
    o = result if out is None else out.dtype
    sp = _spec(kind, a.dtype, compute, result, o)
    plan = _Plan()
    plan.ctx = ctx
    plan.dtype = o
    plan.shape = shape
    if out is None:
        full = [1 if k in axes else n for k, n in enumerate(a.shape)]
        strides = compact_strides(full, a.strides, o.itemsize)
        plan.strides = strides if keepdims else tuple(
            st for k, st in enumerate(strides) if k not in axes
        )  # fmt: skip
    else:
        plan.strides = out.strides
    kept_strides = [st for k, st in enumerate(plan.strides) if not keepdims or k not in axes]
    isz, osz = a.dtype.itemsize, o.itemsize
    if any(st % isz for st in a.strides) or any(st % osz for st in kept_strides):
        raise TooManyDims  # strides that are not whole elements: reduce a compact copy
    if kind in _MOMENTS:
        denom = ddof
    else:
        denom = reduced
    launches, temps, _, _ = plan_launches(
        a.shape, [st // isz for st in a.strides], axes, isz, sp.acc_size,
        [st // osz for st in kept_strides], _multiprocessors(ctx), a.ptr % 16,
        ordered=kind in _ARG, denom=denom,
    )  # fmt: skip
    functions = _functions_for(ctx, sp, sorted({L.kind for L in launches}))
    for L in launches:
        L.fn = functions[L.kind]
        L.tail = _ar.PARAMS.pack(0, 0, *L.fields)[_PTRS.size :]
        L.src_off *= isz if L.src == "in" else sp.acc_size  # bytes from here on
        L.dst_off *= osz if L.dst == "out" else sp.acc_size
    plan.launches = launches
    plan.temps = temps
    plan.single = None
    if len(launches) == 1 and not temps:
        L = launches[0]
        plan.single = (L.fn, L.grid, L.src_off, L.dst_off, L.tail)
    return plan


def reduce(kind, a, axis=None, dtype=None, out=None, keepdims=False, stream=None,
           allocator=None, ddof=0):  # fmt: skip
    """Reduction ``kind`` (see cuplug._codegen.axis_reduction.KINDS) of GPUArray ``a`` with
    NumPy's arguments; returns ``out`` or a new GPUArray (0-d when every axis is reduced)."""
    # x.sum(), x.max(), ...: a plan the C++ layer keeps, looked up and launched there.
    fast = (axis is None and dtype is None and out is None and allocator is None
            and not keepdims and not ddof)  # fmt: skip
    if fast:
        result = _reduce_fast(kind, a, stream)
        if result is not None:
            return result
    ctx = _current_context()
    _core._array._check_same_device(kind, a, out)
    try:
        outkey = None if out is None else (out.dtype, out.shape, out.strides, out.ptr & 15)
        key = (kind, a.dtype, a.shape, a.strides, a.ptr & 15, axis, dtype, keepdims, ddof,
               outkey)  # fmt: skip
        # The plans of this context: they go with it (context_cache), so a new context that
        # got a destroyed one's handle starts without them.
        plan = context_cache.entries(ctx)[_PLANS].get(key)
    except KeyError:  # the context's first plan
        plan = None
    except (AttributeError, TypeError):  # not an array, or an unhashable argument (a list)
        key = plan = None
    if plan is None:
        plan = _plan_for(ctx, key, kind, a, axis, dtype, out, keepdims, ddof)
        if plan is None:  # reduced some other way (a copy first)
            return _copy_first(kind, a, axis, dtype, out, keepdims, stream, allocator, ddof)
    single = plan.single
    if single is None:
        return plan.run(a, out, stream, allocator)
    # The common case in C++: one launch, no temporaries.
    fn, grid, src_off, dst_off, tail = single
    if fast and key is not None:
        _reduce_fast_register(kind, a, fn, grid, _BLOCK[0], src_off, dst_off, tail, plan.shape,
                              plan.dtype, plan.strides)  # fmt: skip
    return _reduce_launch(fn, grid, _BLOCK[0], stream, a, out, plan.shape, plan.dtype,
                          plan.strides, allocator, src_off, dst_off, tail)  # fmt: skip


def _plan_for(ctx, key, kind, a, axis, dtype, out, keepdims, ddof):
    if not isinstance(a, _ArrayBase):
        raise TypeError(f"{kind}: expected a GPUArray, got {type(a).__name__}")
    if isinstance(axis, list):
        axis = tuple(axis)
    if kind in _ARG and axis is None and a.ndim > 1 and not a._c_contiguous:
        return None  # the flat index is C order's: reduce a C-order copy
    try:
        plan = _make_plan(ctx, kind, a, axis, dtype, out, keepdims, ddof)
    except TooManyDims:
        return None
    if key is not None:
        plans = context_cache.entries(ctx).setdefault(_PLANS, {})
        if len(plans) >= PLAN_CACHE_SIZE:
            plans.clear()
        plans[key] = plan
    return plan


def _copy_first(kind, a, axis, dtype, out, keepdims, stream, allocator, ddof):
    """Layouts a launch cannot take (more than MAXD kept dimensions, strides that are not whole
    elements; argmin/argmax over all axes of a non-C-order array): a C-order copy with the
    reduced axes last, reduced as (kept, reduced)."""
    if isinstance(axis, list):
        axis = tuple(axis)
    axes = normalize_axis(axis, a.ndim, kind)
    kept = [k for k in range(a.ndim) if k not in axes]
    view = a.transpose(kept + list(axes))
    dense = result_class()(view.shape, a.dtype, allocator if allocator is not None else a.allocator)
    _apply("_copy", (view,), dense, stream)
    m = math.prod(a.shape[k] for k in kept)
    flat = dense.reshape(m, math.prod(a.shape[k] for k in axes))
    r = reduce(kind, flat, 1, dtype, None, False, stream, allocator, ddof)
    r = r.reshape(result_shape(a.shape, axes, keepdims))
    if out is None:
        return r
    if out.shape != r.shape:
        raise ValueError(
            f"{kind}: out= has shape {out.shape}, the result has shape {r.shape} (axis="
            f"{axis!r}, keepdims={keepdims}); pass an array of that shape"
        )
    _apply("_copy", (r,), out, stream)
    return out
