"""GPUArray methods that compute: fill, astype, mul_add, conj, real, imag, reverse, round,
clip, and the reductions of reductions.ReductionMixin (the operators themselves are C slots of
ArrayBase)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cuplug import _core, _dtypes
from cuplug._codegen.casts import load, store
from cuplug._kernels.engine import Arg, Kernel
from cuplug._kernels.results import compact_strides

from .creation import zeros_like
from .indexing import blank
from .math import broadcast_shape, clip
from .reductions import ReductionMixin

if TYPE_CHECKING:
    from typing_extensions import Self

    from .core import GPUArray

__all__ = ["MethodsMixin"]

_apply = _core._array.apply
_kernels = {}


def _mul_add_kernel(dx, dy, dz):
    key = ("mul_add", dx, dy, dz)
    k = _kernels.get(key)
    if k is None:
        expr = (
            f"{load('a', dz, dz)} * {load('x[i]', dx, dz)} + "
            f"{load('b', dz, dz)} * {load('y[i]', dy, dz)}"
        )
        args = [
            Arg("z", dz, True),
            Arg("a", dz, False),
            Arg("x", dx, True),
            Arg("b", dz, False),
            Arg("y", dy, True),
        ]
        name = f"cuplug_mul_add_{_dtypes.tag(dx)}{_dtypes.tag(dy)}{_dtypes.tag(dz)}"
        k = Kernel(args, f"z[i] = {store(expr, dz, dz)};", name)
        _kernels[key] = k
    return k


def _round_kernel(dtype, decimals):
    dtype = np.dtype(dtype)
    key = ("round", dtype, decimals)
    k = _kernels.get(key)
    if k is None:
        # NumPy's around: rint(x * 10**d) / 10**d (d < 0: rint(x / 10**-d) * 10**-d), computed
        # in the dtype (float16 through float); integers through double.
        loop = dtype if dtype.kind in "fc" else np.dtype(np.float64)
        f = 10.0 ** abs(decimals)
        mul, div = ("*", "/") if decimals >= 0 else ("/", "*")
        x = load("x[i]", dtype, loop)
        if dtype == np.float16:
            # NumPy rounds float16 after each step (it multiplies, rounds and divides in half).
            h = "__half2float(__float2half_rn({}))"
            r = h.format(f"rint({h.format(f'({x}) {mul} f')}) {div} f")
            k = Kernel(
                [Arg("z", dtype, True), Arg("x", dtype, True), Arg("f", np.float32, False)],
                f"z[i] = __float2half_rn({r});",
                f"cuplug_round_{_dtypes.tag(dtype)}",
                builtin=True,
            )
            k.factor = f
            _kernels[key] = k
            return k
        if loop.kind == "c":
            ct = _dtypes.ctype(loop)
            r = f"{ct}(rint(({x}).real() {mul} f) {div} f, rint(({x}).imag() {mul} f) {div} f)"
            fdt = np.float32 if loop.itemsize == 8 else np.float64
        else:
            r = f"(rint(({x}) {mul} f) {div} f)"
            fdt = np.float32 if loop.itemsize <= 4 else np.float64
        k = Kernel(
            [Arg("z", dtype, True), Arg("x", dtype, True), Arg("f", fdt, False)],
            f"z[i] = {store(r, loop, dtype)};",
            f"cuplug_round_{_dtypes.tag(dtype)}",
            builtin=True,
        )
        k.factor = f
        _kernels[key] = k
    return k


def _fill_record(ary, value, stream):
    """Fills an array of a record dtype (gpuarray.vec.float3, custom structs): the bytes of one
    element, written as 1-, 2- or 4-byte words through a view with one more axis, a fill per
    distinct word (one for zeros)."""
    try:
        host = np.asarray(value, dtype=ary.dtype)
    except (TypeError, ValueError) as e:
        raise TypeError(f"fill: cannot make a {ary.dtype} element of {value!r}: {e}") from None
    if host.ndim != 0:
        raise ValueError(f"fill: needs one {ary.dtype} element, got an array of shape {host.shape}")
    if ary.size == 0:
        return
    unit = next(
        u
        for u in (4, 2, 1)
        if (ary.dtype.itemsize % u, ary.ptr % u) == (0, 0)
        and all(st % u == 0 for st in ary.strides)
    )
    words = np.frombuffer(host.tobytes(), dtype=f"u{unit}")
    view = type(ary)(
        ary.shape + (len(words),),
        words.dtype,
        gpudata=ary.ptr,
        strides=ary.strides + (unit,),
        base=ary,
    )
    if (words == words[0]).all():
        _apply("_fill", (words[0],), view, stream)
        return
    for k, word in enumerate(words):
        _apply("_fill", (word,), view[..., k], stream)


class MethodsMixin(ReductionMixin):
    def fill(self, value, stream=None) -> Self:
        """Sets every element to `value` (cast to the dtype); returns self. Record dtypes take
        a tuple or a 0-d array of the dtype (0 for zeros)."""
        if self.dtype.fields is not None:
            _fill_record(self, value, stream)
        else:
            _apply("_fill", (value,), self, stream)
        return self

    def astype(self, dtype, stream=None) -> GPUArray:
        """A copy converted to `dtype` (NumPy's unsafe cast); the same dtype gives a copy."""
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self.copy(stream=stream)
        result = self._new_like(dtype)
        _apply("_copy", (self,), result, stream)
        return result

    def _new_like(self, dtype=None, shape=None):
        """An empty array like self (memory order kept when the shape is the same)."""
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        theirs = self._like_me(dtype, shape)
        if theirs is not None:  # a subclass's _new_like_me decides (PyCUDA's protocol)
            return theirs
        if shape is None or tuple(shape) == self.shape:
            strides = compact_strides(self.shape, self.strides, dtype.itemsize)
            return type(self)(self.shape, dtype, allocator=self.allocator, strides=strides)
        return blank(self, shape, dtype)

    def mul_add(self, selffac, other, otherfac, add_timer=None, stream=None, out=None) -> GPUArray:
        """selffac * self + otherfac * other, in the result dtype NumPy gives that expression
        (broadcast)."""
        dz = _dtypes.result_type(self, other, selffac, otherfac)
        k = _mul_add_kernel(self.dtype, other.dtype, dz)
        if out is None:
            out = self._new_like(dz, broadcast_shape(self, other))
        k(out, selffac, self, otherfac, other, stream=stream)
        return out

    def conj(self, out=None, stream=None) -> GPUArray:
        """The complex conjugate; a copy for real arrays (ndarray.conj)."""
        if self.dtype.kind != "c":
            if out is None:
                return self.copy(stream=stream)
            _apply("_copy", (self,), out, stream)
            return out
        return _apply("conjugate", (self,), out, stream)

    conjugate = conj

    @property
    def real(self) -> GPUArray:
        """The real part: a new array for complex dtypes, self for real ones (as PyCUDA)."""
        if self.dtype.kind != "c":
            return self
        part = self._view(self.shape, self.strides, 0, _real_dtype(self.dtype))
        return part.copy()

    @property
    def imag(self) -> GPUArray:
        """The imaginary part: a new array for complex dtypes, zeros for real ones."""
        if self.dtype.kind != "c":
            return zeros_like(self)
        rd = _real_dtype(self.dtype)
        part = self._view(self.shape, self.strides, rd.itemsize, rd)
        return part.copy()

    def reverse(self, stream=None) -> GPUArray:
        """The elements in reverse order of the flattened (C-order) array, same shape."""
        flat = self.reshape(self.size)
        result = blank(self, self.shape)
        _apply("_copy", (flat[::-1],), result.reshape(self.size), stream)
        return result

    def round(self, decimals=0, out=None, stream=None) -> GPUArray:
        """Rounded to `decimals` places, halves to even (numpy.round)."""
        if self.dtype.kind in "iub" and decimals >= 0:
            if out is None:
                return self.copy(stream=stream)
            _apply("_copy", (self,), out, stream)
            return out
        if decimals == 0 and self.dtype.kind in "fc":
            return _apply("rint", (self,), out, stream)
        k = _round_kernel(self.dtype, int(decimals))
        if out is None:
            out = self._new_like()
        k(out, self, k.factor, stream=stream)
        return out

    def __round__(self, ndigits=None):
        return self.round(0 if ndigits is None else ndigits)

    def clip(self, a_min, a_max, out=None, stream=None) -> GPUArray:
        """Values limited to [a_min, a_max] (numpy.clip)."""
        return clip(self, a_min, a_max, out=out, stream=stream)


def _real_dtype(dtype):
    return np.dtype(np.float32) if np.dtype(dtype).itemsize == 8 else np.dtype(np.float64)
