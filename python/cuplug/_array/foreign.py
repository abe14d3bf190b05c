"""Foreign device memory as GPUArrays, checked before use: the CUDA Array Interface dict's
fields (validated, never coerced), and the memory itself - a pointer the driver knows, with
every byte the shape and strides reach inside that allocation. interop.py's importers
(from_cuda_array_interface, from_dlpack) call these."""

from __future__ import annotations

import math

import numpy as np

from .. import _core
from .._kernels.results import result_class as _result_class

__all__ = ["c_strides", "parse_cai", "wrap_foreign"]

_dl = _core._dlpack


def parse_cai(cai, what):
    """(shape, dtype, ptr, readonly, byte strides, producer stream or None) of a CUDA Array
    Interface dict, each field checked as the protocol defines it (CuPy's reading): tuples of
    ints, not strings or floats coerced; version 0 to 3; stream None or a handle (not 0)."""
    if not isinstance(cai, dict):
        raise TypeError(f"{what} must be a dict, got {type(cai).__name__}")
    for key in ("shape", "typestr", "data"):
        if key not in cai:
            raise ValueError(f"{what} has no '{key}' entry: {cai!r}")
    version = _cai_int(cai.get("version", 0), f"{what}['version']")
    if not 0 <= version <= 3:
        raise ValueError(f"{what}['version'] is {version}; versions 0 to 3 exist")
    shape = _cai_ints(cai["shape"], f"{what}['shape']")
    if any(n < 0 for n in shape):
        raise ValueError(f"{what}['shape'] {shape} has a negative extent")
    data = cai["data"]
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError(f"{what}['data'] must be a (pointer, read_only) pair, got {data!r}")
    ptr = _cai_int(data[0], f"{what}['data'][0]")
    if not 0 <= ptr < 2**64:
        raise ValueError(f"{what}['data'][0] {ptr} is not a device address")
    typestr = cai["typestr"]
    if not isinstance(typestr, str):
        raise TypeError(f"{what}['typestr'] must be a str, got {typestr!r}")
    if cai.get("mask") is not None:
        raise BufferError(f"{what} has a mask; masked CUDA arrays are not supported")
    descr = cai.get("descr")
    dtype = np.dtype(descr if descr and len(descr) > 1 else typestr)
    if not dtype.isnative:
        raise BufferError(f"{what} has dtype {dtype.str}, not in the native byte order")
    strides = cai.get("strides")
    if strides is None:
        byte_strides = c_strides(shape, dtype.itemsize)
    else:
        byte_strides = _cai_ints(strides, f"{what}['strides']")
        if len(byte_strides) != len(shape):
            raise ValueError(
                f"{what}['strides'] {byte_strides} has {len(byte_strides)} entries for "
                f"{len(shape)} dimensions"
            )
    producer = _cai_stream(cai.get("stream"), what) if version >= 3 else None
    return shape, dtype, ptr, data[1], byte_strides, producer


def _cai_int(value, what) -> int:
    """A Python or NumPy integer (not bool, float or str), as the protocol's integers are."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


def _cai_ints(values, what) -> tuple[int, ...]:
    if not isinstance(values, (tuple, list)):
        raise TypeError(f"{what} must be a tuple of ints, got {type(values).__name__} {values!r}")
    return tuple(_cai_int(v, f"{what} entry") for v in values)


def _cai_stream(value, what):
    """The producer's stream: None, or a CUstream as an int (1: legacy default, 2: per-thread
    default, else a handle, which is a pointer: below 2**63). The protocol forbids 0."""
    if value is None:
        return None
    value = _cai_int(value, f"{what}['stream']")
    if value == 0:
        raise ValueError(
            f"{what} gives stream 0, which the protocol forbids (1 is the legacy default stream)"
        )
    if not 0 < value < 2**63:
        raise ValueError(f"{what}['stream'] {value} is not a CUDA stream handle")
    return value


def c_strides(shape, itemsize) -> tuple[int, ...]:
    """Byte strides of a C-contiguous array (the protocols' meaning of no strides)."""
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(int(extent), 1)
    return tuple(reversed(strides))


def wrap_foreign(shape, dtype, ptr, byte_strides, owner, what):
    """A GPUArray over foreign memory. Non-empty: the pointer must be memory the driver knows,
    and every byte the shape and strides reach must lie in that allocation (a made-up, freed or
    too small buffer would fault at use, or write into someone else's memory)."""
    cls = _result_class()
    shape, byte_strides = tuple(shape), tuple(byte_strides)
    if not ptr:
        if math.prod(shape):
            raise BufferError(
                f"{what} gives a null data pointer for a non-empty array of shape {shape}"
            )
        return cls(shape, dtype, strides=byte_strides, base=owner)
    start, size = _dl.pointer_range(ptr, what)
    view = cls(shape, dtype, gpudata=ptr, strides=byte_strides, base=owner)
    lo, hi = reach(view)
    if ptr + lo < start or ptr + hi > start + size:
        raise BufferError(
            f"{what}: shape {shape} with strides {byte_strides} reaches bytes "
            f"[{ptr + lo:#x}, {ptr + hi:#x}), outside its allocation [{start:#x}, "
            f"{start + size:#x})"
        )
    return view


def reach(array):
    """[lo, hi): the bytes a non-empty array reaches, relative to its element 0."""
    lo = sum((n - 1) * s for n, s in zip(array.shape, array.strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(array.shape, array.strides) if s > 0)
    return lo, hi + array.itemsize
