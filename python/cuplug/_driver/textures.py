"""Element formats of CUDA arrays and textures from NumPy dtypes, and the memory layout that a
TextureObject reads from a GPUArray, a ``__cuda_array_interface__`` object or a raw pointer."""

from __future__ import annotations

import numpy as np

from cuplug import _core
from cuplug._core import array_format

_ArrayBase = _core._array.ArrayBase

_FORMATS = {
    np.dtype(np.uint8): array_format.UNSIGNED_INT8,
    np.dtype(np.uint16): array_format.UNSIGNED_INT16,
    np.dtype(np.uint32): array_format.UNSIGNED_INT32,
    np.dtype(np.int8): array_format.SIGNED_INT8,
    np.dtype(np.int16): array_format.SIGNED_INT16,
    np.dtype(np.int32): array_format.SIGNED_INT32,
    np.dtype(np.float16): array_format.HALF,
    np.dtype(np.float32): array_format.FLOAT,
}

_NO_64_BIT = (
    "textures have no 64-bit element formats; store doubles as two 32-bit halves "
    "(format=array_format.SIGNED_INT32, num_channels=2, read as int2 and joined with "
    "__hiloint2double)"
)


def dtype_to_array_format(dtype):
    """PyCUDA's mapping: uint8/16/32, int8/16/32 and float32 (float16 too, beyond PyCUDA).

    Parameters
    ----------
    dtype : numpy.typing.DTypeLike
        An element type.

    Returns
    -------
    array_format
        The CUDA array format.
    """
    fmt = _FORMATS.get(np.dtype(dtype))
    if fmt is None:
        raise TypeError(f"cannot convert dtype '{np.dtype(dtype)}' to array format")
    return fmt


def format_and_channels(dtype) -> tuple:
    """(array_format, channels) for a scalar dtype, complex64 (2 floats) or a vector dtype of
    1, 2 or 4 equal fields (cuplug's float4, uchar4, ...)."""
    dtype = np.dtype(dtype)
    if dtype.fields:
        bases = {dtype.fields[name][0] for name in dtype.names}
        if len(bases) == 1 and len(dtype.names) in (1, 2, 4):
            base = bases.pop()
            if base.itemsize * len(dtype.names) == dtype.itemsize and base in _FORMATS:
                return _FORMATS[base], len(dtype.names)
        raise TypeError(
            f"dtype {dtype} has no texture format: a vector dtype needs 1, 2 or 4 fields of one "
            "8/16/32-bit type"
        )
    if dtype == np.complex64:
        return array_format.FLOAT, 2
    if dtype.itemsize == 8:
        raise TypeError(f"dtype {dtype}: {_NO_64_BIT}")
    return dtype_to_array_format(dtype), 1


# What the driver asks of texture memory (device attributes TEXTURE_ALIGNMENT and
# TEXTURE_PITCH_ALIGNMENT, the same on every GPU of CUDA 13; measured on an H100: any other start
# or pitch is CUDA_ERROR_INVALID_VALUE).
TEXTURE_ALIGNMENT = 512
TEXTURE_PITCH_ALIGNMENT = 32


def _check_alignment(result: dict) -> None:
    ptr = result["ptr"]
    if ptr % TEXTURE_ALIGNMENT:
        raise ValueError(
            f"TextureObject: texture memory must start at a multiple of {TEXTURE_ALIGNMENT} "
            f"bytes (the texture alignment), this starts {ptr % TEXTURE_ALIGNMENT} bytes past "
            "one (a slice not at the start of its allocation?): copy it into a fresh GPUArray "
            "or an Array (np_to_array)"
        )
    if "height" in result and result["pitch"] % TEXTURE_PITCH_ALIGNMENT:
        raise ValueError(
            f"TextureObject: the row pitch of pitched texture memory must be a multiple of "
            f"{TEXTURE_PITCH_ALIGNMENT} bytes, not {result['pitch']}: pad the rows (make the "
            "array wider and slice it) or copy it into an Array (np_to_array)"
        )


def _pointer_and_owner(source):
    """The device address of `source` and the object owning its memory (or None)."""
    if isinstance(source, _ArrayBase):
        # .ptr refuses freed memory and a destroyed context's (a view's gpudata is a bare int);
        # the array itself is the owner: the texture keeps it, and checks its memory, alive.
        return source.ptr, source
    gpudata = getattr(source, "gpudata", None)
    if gpudata is not None:
        return int(gpudata), gpudata
    cai = getattr(source, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0]), None
    try:
        return int(source), source
    except TypeError:
        raise TypeError(
            "TextureObject: the source must be an Array, a GPUArray, an object with "
            "__cuda_array_interface__, or a device pointer with an explicit layout, got "
            f"{type(source).__name__}"
        ) from None


def describe_memory(source, **layout) -> dict:
    """What a TextureObject over device memory reads: ptr, format, num_channels, owner, and
    size_in_bytes (linear) or width, height and pitch (pitched). Array-like sources give their
    own layout; keywords override it (format=..., num_channels=... for the double hack)."""
    known = {"format", "num_channels", "size_in_bytes", "width", "height", "pitch"}
    unknown = sorted(set(layout) - known)
    if unknown:
        raise TypeError(
            f"TextureObject got unexpected keyword arguments {unknown}; the memory layout "
            f"keywords are {sorted(known)}"
        )
    ptr, owner = _pointer_and_owner(source)
    result = {"ptr": ptr, "owner": owner}
    shape = getattr(source, "shape", None)
    if shape is not None and hasattr(source, "dtype") and "format" not in layout:
        dtype = np.dtype(source.dtype)
        fmt, channels = format_and_channels(dtype)
        result.update(format=fmt, num_channels=channels)
        strides = getattr(source, "strides", None)
        if strides is None:  # __cuda_array_interface__ with strides None: C order
            strides = tuple(
                int(np.prod(shape[i + 1 :])) * dtype.itemsize for i in range(len(shape))
            )
        if len(shape) == 1 and strides[0] == dtype.itemsize:
            result["size_in_bytes"] = shape[0] * dtype.itemsize
        elif len(shape) == 2 and strides[1] == dtype.itemsize:
            result.update(width=shape[1], height=shape[0], pitch=strides[0])
        else:
            raise ValueError(
                f"TextureObject: a {len(shape)}-D array with strides {tuple(strides)} cannot be "
                "read as a texture: use a contiguous 1-D array (linear) or a 2-D array whose rows "
                "are contiguous (pitched), or copy it into an Array (np_to_array)"
            )
    result.update(layout)
    if "format" not in result:
        raise TypeError(
            "TextureObject over a device pointer needs its layout: format=array_format..., "
            "num_channels=1|2|4, and size_in_bytes=... (linear) or width=, height=, pitch= "
            "(pitched)"
        )
    result["format"] = array_format(int(result["format"]))
    result.setdefault("num_channels", 1)
    if "height" in result:
        missing = [k for k in ("width", "pitch") if k not in result]
        if missing:
            raise TypeError(f"TextureObject: pitched memory (height=) also needs {missing}")
    elif "size_in_bytes" not in result:
        raise TypeError("TextureObject: linear memory needs size_in_bytes=")
    _check_alignment(result)
    return result


# TextureObject / SurfaceObject (C++) call it for device memory (python/src/hooks.hpp).
_core._register_hooks(describe_memory=describe_memory)
