"""DLPack's device and element-type codes and their NumPy equivalents (dlpack.h's DLDeviceType
and DLDataType), for interop.py's export and import. Pure tables: no device, no capsule."""

from __future__ import annotations

import numpy as np

# DLDeviceType values (DLPack's dlpack.h).
kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13
_DEVICE_NAMES = {
    kDLCPU: "CPU",
    kDLCUDA: "CUDA",
    kDLCUDAHost: "CUDA pinned host",
    kDLCUDAManaged: "CUDA managed",
}
# Memory a CUDA kernel may read through its pointer (pinned host memory through UVA).
_CUDA_READABLE = (kDLCUDA, kDLCUDAManaged, kDLCUDAHost)

# DLDataTypeCode values by NumPy dtype kind, and back.
_CODE_OF_KIND = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_KIND_OF_CODE = {code: kind for kind, code in _CODE_OF_KIND.items()}
_CODE_NAMES = {
    0: "int",
    1: "uint",
    2: "float",
    3: "opaque handle",
    4: "bfloat",
    5: "complex",
    6: "bool",
}


def dlpack_dtype(dtype) -> tuple[int, int, int]:
    """(code, bits, lanes) of a NumPy dtype; BufferError for what DLPack cannot describe."""
    dtype = np.dtype(dtype)
    code = _CODE_OF_KIND.get(dtype.kind)
    if code is None or dtype.fields is not None or dtype.subdtype is not None:
        raise BufferError(
            f"dtype {dtype} has no DLPack equivalent: DLPack carries bool, integer, float and "
            "complex elements only"
        )
    if not dtype.isnative:
        raise BufferError(f"dtype {dtype.str} is not in the native byte order, which DLPack needs")
    if dtype.kind in "fc" and dtype.itemsize > (8 if dtype.kind == "f" else 16):
        raise BufferError(
            f"dtype {dtype} is the x87 long double, which DLPack has no code for (its 128-bit "
            "float is IEEE binary128)"
        )
    return code, dtype.itemsize * 8, 1


def numpy_dtype(code: int, bits: int, lanes: int) -> np.dtype:
    """The NumPy dtype of a DLDataType; BufferError naming it when NumPy has none."""
    kind = _KIND_OF_CODE.get(code)
    name = f"{_CODE_NAMES.get(code, f'code {code}')}{bits}"
    if lanes != 1:
        raise BufferError(f"DLPack dtype {name}x{lanes} is a vector type; cuplug reads lanes=1")
    if kind is None or bits % 8:
        raise BufferError(f"DLPack dtype {name} has no NumPy equivalent")
    if (kind == "f" and bits > 64) or (kind == "c" and bits > 128):
        # NumPy's float128 / complex256 are the x87 80-bit long double (padded), not IEEE
        # binary128: reading one as the other gives garbage.
        raise BufferError(
            f"DLPack dtype {name} is IEEE binary128; NumPy has no such type (its float128 is "
            "the x87 long double)"
        )
    try:
        dtype = np.dtype(f"{kind}{bits // 8}") if kind != "b" else np.dtype(np.bool_)
    except TypeError:
        raise BufferError(f"DLPack dtype {name} has no NumPy equivalent") from None
    if kind == "b" and bits != 8:
        raise BufferError(f"DLPack dtype {name}: booleans must be 8 bits")
    return dtype


__all__ = [
    "dlpack_dtype",
    "kDLCPU",
    "kDLCUDA",
    "kDLCUDAHost",
    "kDLCUDAManaged",
    "numpy_dtype",
]
