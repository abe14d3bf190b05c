"""Views of GPUArrays: indexing (ints, slices with any step, Ellipsis, newaxis), assignment
through them, reshape, ravel, view, squeeze and transpose. Views share memory; `base` keeps the
viewed array alive."""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING

import numpy as np

from cuplug import _core

if TYPE_CHECKING:
    from .core import GPUArray

__all__ = ["IndexingMixin", "parse_index", "reshape_strides"]

_apply = _core._array.apply


def blank(a, shape, dtype=None, strides=None, order="C"):
    """A new empty array of a's type and allocator. A subclass's constructor is not run (its
    signature may be its own, as reikna's is): results of a shape other than a's are made as
    the C++ layer makes them; those of a's shape go through a._new_like_me (PyCUDA's protocol)."""
    cls = type(a)
    out = cls.__new__(cls)
    dtype = a.dtype if dtype is None else dtype
    _core._array.ArrayBase.__init__(out, shape, dtype, a.allocator, None, None, strides, order)
    return out


_ArrayBase = _core._array.ArrayBase
# numpy.exceptions appeared in NumPy 1.25; before, the class lived at the top level.
_AxisError = getattr(np, "exceptions", np).AxisError


def _as_int(obj):
    if isinstance(obj, (bool, np.bool_)):
        raise IndexError(
            "boolean indices are not supported by GPUArray indexing; use where() or take()"
        )
    try:
        return operator.index(obj)
    except TypeError:
        return None


def parse_index(shape, strides, index):
    """(shape, strides, byte offset) of self[index] for ints, slices, Ellipsis and None."""
    if not isinstance(index, tuple):
        index = (index,)
    ellipses = sum(1 for x in index if x is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    real = sum(1 for x in index if x is not None and x is not Ellipsis)
    ndim = len(shape)
    if real > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {real} were indexed"
        )
    if ellipses:
        k = index.index(Ellipsis)
        index = index[:k] + (slice(None),) * (ndim - real) + index[k + 1 :]
    else:
        index = index + (slice(None),) * (ndim - real)

    new_shape, new_strides = [], []
    offset = 0
    d = 0
    for item in index:
        if item is None:
            new_shape.append(1)
            new_strides.append(0)
            continue
        if isinstance(item, slice):
            n = shape[d]
            start, stop, step = item.indices(n)
            length = len(range(start, stop, step))
            if length > 0:
                offset += start * strides[d]
            new_shape.append(length)
            # One element or none: the step never moves, and a huge step (a[::2**62]) must not
            # make a stride beyond int64 (NumPy gives 0 there).
            stride = strides[d] * step
            new_strides.append(stride if length > 1 or -(2**63) <= stride < 2**63 else 0)
            d += 1
            continue
        i = _as_int(item)
        if i is None:
            raise IndexError(
                "GPUArray indices must be integers, slices, Ellipsis or None (newaxis); "
                f"got {type(item).__name__}: use take() for index arrays"
            )
        n = shape[d]
        if i < -n or i >= n:
            raise IndexError(f"index {i} is out of bounds for axis {d} with size {n}")
        if i < 0:
            i += n
        offset += i * strides[d]
        d += 1
    return tuple(new_shape), tuple(new_strides), offset


def reshape_strides(old_shape, old_strides, new_shape, fortran, itemsize):
    """Strides of a view of `new_shape` over the same memory, or None when a copy is needed
    (NumPy's _attempt_nocopy_reshape)."""
    olddims, oldstr = [], []
    for n, s in zip(old_shape, old_strides):
        if n != 1:
            olddims.append(n)
            oldstr.append(s)
    oldnd, newnd = len(olddims), len(new_shape)
    newstrides = [0] * newnd
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < newnd and oi < oldnd:
        np_ = new_shape[ni]
        op = olddims[oi]
        while np_ != op:
            if np_ < op:
                np_ *= new_shape[nj]
                nj += 1
            else:
                op *= olddims[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if fortran:
                if oldstr[ok + 1] != olddims[ok] * oldstr[ok]:
                    return None
            elif oldstr[ok] != olddims[ok + 1] * oldstr[ok + 1]:
                return None
        if fortran:
            newstrides[ni] = oldstr[oi]
            for nk in range(ni + 1, nj):
                newstrides[nk] = newstrides[nk - 1] * new_shape[nk - 1]
        else:
            newstrides[nj - 1] = oldstr[oj - 1]
            for nk in range(nj - 1, ni, -1):
                newstrides[nk - 1] = newstrides[nk] * new_shape[nk]
        ni = nj
        nj += 1
        oi = oj
        oj += 1
    last = newstrides[ni - 1] if ni >= 1 else itemsize
    if fortran and ni >= 1:
        last *= new_shape[ni - 1]
    for nk in range(ni, newnd):
        newstrides[nk] = last
    return tuple(newstrides)


def _normalize_axis(axis, ndim, name):
    """axis in [0, ndim), NumPy's AxisError (an IndexError and a ValueError) otherwise."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise _AxisError(axis, ndim, name)
    return axis % ndim


def _dense(shape, itemsize, fortran):
    strides = [0] * len(shape)
    s = itemsize
    order = range(len(shape)) if fortran else reversed(range(len(shape)))
    for k in order:
        strides[k] = s
        s *= max(shape[k], 1)
    return tuple(strides)


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    elif len(shape) == 1 and isinstance(shape[0], np.ndarray):
        shape = tuple(int(x) for x in np.atleast_1d(shape[0]))
    out = []
    for s in shape:
        i = _as_int(s)
        if i is None:
            raise TypeError(f"reshape: shape entries must be integers, got {type(s).__name__}")
        out.append(i)
    return tuple(out)


class IndexingMixin:
    def __getitem__(self, index) -> GPUArray:
        shape, strides, offset = parse_index(self.shape, self.strides, index)
        return self._view(shape, strides, offset)

    def __setitem__(self, index, value):
        target = self[index]
        if isinstance(value, _ArrayBase):
            _apply("_copy", (value,), target, None)
            return
        if target.dtype.fields is not None:  # records: a tuple is one element
            host = np.asarray(value, dtype=target.dtype)
            if host.ndim == 0:
                target.fill(host)
                return
        elif isinstance(value, (bool, int, float, complex, np.generic)):
            _apply("_fill", (value,), target, None)
            return
        else:
            host = np.asarray(value)
            if host.ndim == 0:
                _apply("_fill", (host[()],), target, None)
                return
        host = np.broadcast_to(host.astype(target.dtype, copy=False), target.shape)
        target.set(host)

    def reshape(self, *shape, order="C") -> GPUArray:
        """A view of the new shape when the memory allows (else a copy), NumPy's rules; one
        entry may be -1. The same shape gives self (as PyCUDA).

        The elements are NumPy's; the layout follows PyCUDA's where they differ: a contiguous
        array reshaped with order="C" or "F" gives an array contiguous in that order (PyCUDA's
        reshape lays the memory out in the order asked), a copy where NumPy's view would not be
        (docs/compat.md)."""
        result = self._reshape_numpy(shape, order)
        if (
            order in ("C", "F")
            and (self._c_contiguous or self._f_contiguous)
            and not (result._c_contiguous if order == "C" else result._f_contiguous)
        ):
            dense = blank(self, result.shape, order=order)
            _apply("_copy", (result,), dense, None)
            return dense
        return result

    def _reshape_numpy(self, shape, order):
        shape = _shape_args(shape)
        if order not in ("C", "F", "A"):
            raise ValueError(f"reshape: order must be 'C', 'F' or 'A', got {order!r}")
        unknown = [k for k, s in enumerate(shape) if s == -1]
        if len(unknown) > 1:
            raise ValueError("can only specify one unknown dimension")
        if any(s < -1 for s in shape):
            raise ValueError(f"negative dimensions not allowed in shape {shape}")
        # Python integers: NumPy's int64 product wraps (16 * (2**60 + 1) "is" 16).
        known = math.prod(s for s in shape if s != -1)
        if unknown:
            if known == 0 or self.size % known:
                raise ValueError(f"cannot reshape array of size {self.size} into shape {shape}")
            shape = tuple(self.size // known if s == -1 else s for s in shape)
        if math.prod(shape) != self.size:
            raise ValueError(f"cannot reshape array of size {self.size} into shape {shape}")
        if shape == self.shape:
            return self
        fortran = order == "F" or (order == "A" and self._f_contiguous and not self._c_contiguous)
        if self.size == 0:
            return self._view(shape, _dense(shape, self.itemsize, fortran), 0)
        strides = reshape_strides(self.shape, self.strides, shape, fortran, self.itemsize)
        if strides is not None:
            return self._view(shape, strides, 0)
        dense = blank(self, self.shape, order="F" if fortran else "C")
        _apply("_copy", (self,), dense, None)
        return dense._view(shape, _dense(shape, self.itemsize, fortran), 0)

    def ravel(self, order="C") -> GPUArray:
        """The elements as a 1-d array (a view when the memory allows)."""
        return self.reshape(self.size, order=order)

    def view(self, dtype=None) -> GPUArray:
        """The same memory seen as `dtype`; with another item size the fastest-varying axis is
        rescaled (it must be contiguous and divide evenly)."""
        if dtype is None:
            return self._view(self.shape, self.strides, 0)
        dtype = np.dtype(dtype)
        old, new = self.itemsize, dtype.itemsize
        if new == 0:
            raise ValueError(f"cannot view a GPUArray as {dtype!r}: its elements have 0 bytes")
        if old == new:
            return self._view(self.shape, self.strides, 0, dtype)
        if self.ndim == 0:
            raise ValueError(
                "Changing the dtype of a 0d array is only supported if the itemsize is unchanged"
            )
        axis = min(range(self.ndim), key=lambda k: abs(self.strides[k]))
        if self.strides[axis] != old and self.shape[axis] != 1:
            raise ValueError(
                "To change to a dtype of a different size, the last axis must be contiguous"
            )
        if (self.shape[axis] * old) % new:
            raise ValueError(
                "When changing to a larger dtype, its size must be a divisor of the total size "
                "in bytes of the last axis of the array."
            )
        shape = list(self.shape)
        strides = list(self.strides)
        shape[axis] = self.shape[axis] * old // new
        strides[axis] = new
        return self._view(tuple(shape), tuple(strides), 0, dtype)

    def squeeze(self, axis=None) -> GPUArray:
        """Without the axes of length 1 (all of them, or those named by `axis`)."""
        if axis is None:
            keep = [k for k in range(self.ndim) if self.shape[k] != 1]
        else:
            axes = (axis,) if isinstance(axis, int) else tuple(axis)
            axes = {a % self.ndim if self.ndim else a for a in axes}
            for a in axes:
                if not 0 <= a < max(self.ndim, 1) or self.shape[a] != 1:
                    raise ValueError(
                        "cannot select an axis to squeeze out which has size not equal to one"
                    )
            keep = [k for k in range(self.ndim) if k not in axes]
        return self._view(
            tuple(self.shape[k] for k in keep), tuple(self.strides[k] for k in keep), 0
        )

    def transpose(self, *axes, **kwargs) -> GPUArray:
        """A view with the axes permuted (reversed by default). ``transpose(axes=(...))`` as
        PyCUDA's signature has it (NumPy takes them positionally only) works too."""
        if kwargs:
            if set(kwargs) != {"axes"}:
                bad = next(k for k in kwargs if k != "axes")
                raise TypeError(f"transpose() got an unexpected keyword argument {bad!r}")
            if axes:
                raise TypeError("transpose() got the axes both positionally and as axes=")
            axes = (kwargs["axes"],)
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list, range))):
            axes = axes[0]
        if not axes:
            axes = tuple(reversed(range(self.ndim)))
        axes = tuple(operator.index(a) for a in axes)
        axes = tuple(a + self.ndim if a < 0 else a for a in axes)
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"axes {axes} don't match array of {self.ndim} dimensions")
        return self._view(
            tuple(self.shape[a] for a in axes), tuple(self.strides[a] for a in axes), 0
        )

    def swapaxes(self, axis1, axis2) -> GPUArray:
        """A view with axes axis1 and axis2 exchanged (NumPy's AxisError when one is out of
        range)."""
        axis1 = _normalize_axis(axis1, self.ndim, "axis1")
        axis2 = _normalize_axis(axis2, self.ndim, "axis2")
        axes = list(range(self.ndim))
        axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
        return self.transpose(axes)
