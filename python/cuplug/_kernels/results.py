"""How the engines (and the array routines) make their results without importing the array
class: the class is the one the array layer registered with the C++ layer (the ``result_type``
hook; ``_core._array.result_type()`` asks it back), the same class C++ operations make; and
their strides are the compact strides of an operand's memory order (PyCUDA's
``_compact_strides``). Imports only the C++ extension: the class imports the
routines, nothing imports the class back (CuPy's direction)."""

from __future__ import annotations

from cuplug import _core

__all__ = ["compact_strides", "empty", "is_dense", "memory_order", "result_class"]

#: The registered array class (GPUArray once cuplug._array is imported; ArrayBase before).
result_class = _core._array.result_type


def empty(shape, dtype, allocator=None, strides=None, order="C"):
    """An uninitialised array of the registered class (the results of the engines)."""
    return result_class()(shape, dtype, allocator, None, None, strides, order)


def memory_order(shape, strides):
    """Axes from outermost to innermost in memory (by |stride|, ties keep C order)."""
    return sorted(range(len(shape)), key=lambda k: -abs(strides[k]))


def compact_strides(shape, strides, itemsize):
    """Dense strides with the axes in the memory order of `strides` (PyCUDA's
    _compact_strides: F stays F, a transpose stays transposed)."""
    out = [0] * len(shape)
    s = itemsize
    for k in reversed(memory_order(shape, strides)):
        out[k] = s
        s *= max(shape[k], 1)
    return tuple(out)


def is_dense(shape, strides, itemsize):
    """True when the array covers one gap-free block with positive strides."""
    if 0 in shape:
        return True
    expect = itemsize
    for s, n in sorted((s, n) for n, s in zip(shape, strides) if n != 1):
        if s != expect:
            return False
        expect *= n
    return True
