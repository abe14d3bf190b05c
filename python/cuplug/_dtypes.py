"""Dtypes for kernels: the C-name registry PyCUDA users know (pycuda.tools' registry), the C types
and headers generated kernels use, the array layer's type codes, and NumPy's own promotion.

Promotion is never reimplemented here: every answer comes from NumPy (``ufunc.resolve_dtypes``,
``np.result_type``), with Python scalars kept weak (NEP 50 under NumPy 2; under NumPy 1.x the
legacy value-based rules, which need the scalar's value, so callers pass the value itself).
"""

from __future__ import annotations

import re
import struct
import sys
import warnings

import numpy as np

__all__ = [
    "NEP50",
    "TypeNameNotKnown",
    "code_of",
    "ctype",
    "dtype_of_code",
    "dtype_to_ctype",
    "get_or_register_dtype",
    "headers_for",
    "is_weak_scalar",
    "register_dtype",
    "resolve_ufunc",
    "result_type",
    "tag",
]

# ---- the registry (C type names <-> dtypes) -----------------------------------------------------


class TypeNameNotKnown(RuntimeError):  # noqa: N818 (PyCUDA's name)
    """A dtype has no registered C type name (register it with get_or_register_dtype)."""


class _DTypeRegistry:
    def __init__(self):
        self.dtype_to_name = {}
        self.name_to_dtype = {}

    def get_or_register_dtype(self, c_names, dtype=None):
        """With dtype=None: the dtype registered for the C type name(s) (TypeNameNotKnown if
        none). Otherwise registers dtype under the names and returns the registered dtype
        object; a name already registered to a different dtype is a RuntimeError.

        Parameters
        ----------
        c_names : str | list[str]
            The C type name(s).
        dtype : numpy.typing.DTypeLike | None
            The dtype to register under them; None: look the name up.

        Returns
        -------
        numpy.dtype
            The dtype.
        """
        if isinstance(c_names, str):
            c_names = [c_names]

        if dtype is None:
            found = {self.name_to_dtype.get(name) for name in c_names}
            if None in found:
                missing = [name for name in c_names if name not in self.name_to_dtype]
                raise TypeNameNotKnown(f"unknown C type name(s): {', '.join(missing)}")
            if len(found) != 1:
                raise ValueError(f"C type names {c_names} map to different dtypes")
            return found.pop()

        dtype = np.dtype(dtype)
        existing_name = self.dtype_to_name.get(dtype)
        if existing_name is not None:
            dtype = self.name_to_dtype[existing_name]

        for name in c_names:
            registered = self.name_to_dtype.setdefault(name, dtype)
            if registered != dtype:
                raise RuntimeError(f"name '{name}' already registered to different dtype")

        if existing_name is None:
            self.dtype_to_name[dtype] = c_names[0]
        self.dtype_to_name.setdefault(str(dtype), c_names[0])
        return dtype

    def dtype_to_ctype(self, dtype):
        if dtype is None:
            raise ValueError("dtype may not be None")
        dtype = np.dtype(dtype)
        try:
            return self.dtype_to_name[dtype]
        except KeyError:
            raise ValueError(f"unable to map dtype '{dtype}'") from None


_registry = _DTypeRegistry()
get_or_register_dtype = _registry.get_or_register_dtype


def _fill_dtype_registry():
    # The C names PyCUDA registers (compyte's fill_registry_with_c_types, respect_windows=True),
    # float16 as CUDA's __half, and complex as libcu++'s cuda::std::complex (which cuplug's
    # kernels use instead of PyCUDA's own header); PyCUDA's complex names stay as aliases.
    reg = get_or_register_dtype
    reg("bool", np.bool_)
    reg(["signed char", "char"], np.int8)
    reg("unsigned char", np.uint8)
    reg(["short", "signed short", "signed short int", "short signed int"], np.int16)
    reg(["unsigned short", "unsigned short int", "short unsigned int"], np.uint16)
    reg(["int", "signed int"], np.int32)
    reg(["unsigned", "unsigned int"], np.uint32)
    if struct.calcsize("@P") * 8 == 64:
        i64 = "long long" if sys.platform == "win32" else "long"
        reg([i64, f"{i64} int", f"signed {i64} int", f"{i64} signed int"], np.int64)
        reg([f"unsigned {i64}", f"unsigned {i64} int", f"{i64} unsigned int"], np.uint64)
        reg([f"unsigned {i64}"], np.uintp)
        if i64 == "long":
            reg(["long long", "long long int", "signed long long"], np.int64)
            reg(["unsigned long long", "unsigned long long int"], np.uint64)
    else:
        reg(["unsigned"], np.uintp)
    reg(["__half", "half"], np.float16)
    reg("float", np.float32)
    reg("double", np.float64)
    reg(["cuda::std::complex<float>", "pycuda::complex<float>"], np.complex64)
    reg(["cuda::std::complex<double>", "pycuda::complex<double>"], np.complex128)


_fill_dtype_registry()


def register_dtype(dtype, c_names, alias_ok=False):
    """Deprecated: use get_or_register_dtype.

    Parameters
    ----------
    dtype : numpy.typing.DTypeLike
        The dtype.
    c_names : str | list[str]
        Its C type name(s).
    alias_ok : bool
        Whether a dtype already registered under another name may get this one too.
    """
    warnings.warn(
        "register_dtype is deprecated. Use get_or_register_dtype instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    if isinstance(c_names, str):
        c_names = [c_names]
    dtype = np.dtype(dtype)
    if not alias_ok and dtype in _registry.dtype_to_name:
        raise RuntimeError(
            f"dtype '{dtype}' already registered (as '{_registry.dtype_to_name[dtype]}', "
            f"new names '{', '.join(c_names)}')"
        )
    get_or_register_dtype(c_names, dtype)


_TEX_HACK = {
    np.dtype(np.float32): "fp_tex_float",
    np.dtype(np.float64): "fp_tex_double",
    np.dtype(np.complex64): "fp_tex_cfloat",
    np.dtype(np.complex128): "fp_tex_cdouble",
}


def dtype_to_ctype(dtype, with_fp_tex_hack=False):
    """The registered C type name of a dtype ("float", "unsigned int",
    "cuda::std::complex<float>", a name given to get_or_register_dtype, ...).

    Parameters
    ----------
    dtype : numpy.typing.DTypeLike
        The dtype.
    with_fp_tex_hack : bool
        PyCUDA's texture flag: fp_tex_float / fp_tex_double for float types.

    Returns
    -------
    str
        The C type name.
    """
    if dtype is None:
        raise ValueError("dtype may not be None")
    dtype = np.dtype(dtype)
    if with_fp_tex_hack:
        hacked = _TEX_HACK.get(dtype)
        if hacked is not None:
            return hacked
    return _registry.dtype_to_ctype(dtype)


# ---- the array layer's types ---------------------------------------------------------------------

# Type codes shared with the C++ array core (python/src/array/type_codes.hpp): same order.
_CODES = (
    np.bool_,
    np.int8,
    np.uint8,
    np.int16,
    np.uint16,
    np.int32,
    np.uint32,
    np.int64,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
    np.complex64,
    np.complex128,
)
_CODE_DTYPES = tuple(np.dtype(t) for t in _CODES)
_CODE_OF = {dt: code for code, dt in enumerate(_CODE_DTYPES)}

# The C type generated kernels use for each code. Fixed-width spellings, so that a kernel means
# the same on every platform (PyCUDA's registry says "long", 32-bit on Windows).
_CTYPES = (
    "bool",
    "signed char",
    "unsigned char",
    "short",
    "unsigned short",
    "int",
    "unsigned int",
    "long long",
    "unsigned long long",
    "__half",
    "float",
    "double",
    "cuda::std::complex<float>",
    "cuda::std::complex<double>",
)

SUPPORTED = ", ".join(str(dt) for dt in _CODE_DTYPES)


def code_of(dtype):
    """The array layer's type code of a dtype; TypeError naming it when arrays cannot compute
    with it (structured, vector, object, string, non-native byte order dtypes)."""
    dtype = np.dtype(dtype)
    try:
        return _CODE_OF[dtype]
    except KeyError:
        pass
    if not dtype.isnative:
        raise TypeError(
            f"dtype {dtype.str!r} ({dtype}) has non-native byte order; kernels compute with "
            f"native types only: use .astype({dtype.newbyteorder('=')!s}) on the host first"
        )
    raise TypeError(f"dtype {dtype} is not supported in array arithmetic; supported: {SUPPORTED}")


def dtype_of_code(code):
    return _CODE_DTYPES[code]


def ctype(dtype):
    """The C type of a dtype in generated kernels: "float", "__half", "long long",
    "cuda::std::complex<double>", ...; registered names for other dtypes (vec types, structs)."""
    dtype = np.dtype(dtype)
    code = _CODE_OF.get(dtype)
    if code is not None:
        return _CTYPES[code]
    return dtype_to_ctype(dtype)


def tag(dtype):
    """A short identifier-safe name of a dtype for kernel names: "f4", "i8", "b1", "c16"."""
    dtype = np.dtype(dtype)
    if dtype.kind in "biufc":
        return f"{dtype.kind}{dtype.itemsize}"
    return re.sub(r"\W", "_", _registry.dtype_to_name.get(dtype, f"v{dtype.itemsize}"))


def headers_for(dtypes):
    """The #include lines kernels over these dtypes need: cuda_fp16.h for float16, that and
    <cuda/std/complex> for complex, none otherwise (each costs compile time)."""
    kinds = {np.dtype(dt).kind + str(np.dtype(dt).itemsize) for dt in dtypes}
    if "c8" in kinds or "c16" in kinds:
        # Complex kernels all start with the same two lines, so that NVRTC's automatic
        # precompiled header (made by the first) serves every later one.
        return ["#include <cuda_fp16.h>", "#include <cuda/std/complex>"]
    if "f2" in kinds:
        return ["#include <cuda_fp16.h>"]
    return []


# ---- promotion -----------------------------------------------------------------------------------

#: True when NumPy keeps Python scalars weak (NEP 50: NumPy 2, or 1.x with the state set).
NEP50 = int(np.__version__.split(".")[0]) >= 2
if not NEP50:  # pragma: no cover - NumPy 1.x only
    _state = getattr(np, "_get_promotion_state", None)
    NEP50 = _state is not None and _state() == "weak"

_WEAK_TYPES = (bool, int, float, complex)


def is_weak_scalar(value):
    """A Python bool/int/float/complex (not a NumPy scalar): weak in promotion."""
    return type(value) in _WEAK_TYPES


def _promotion_operand(x):
    """What NumPy's resolution takes for an operand: a dtype, or for a weak Python scalar its
    type (NEP 50) or its value (legacy rules)."""
    if type(x) is bool or x is bool:
        # NumPy treats a Python bool as a bool array (the lowest kind: weak or not alike).
        return np.dtype(np.bool_) if (NEP50 or x is bool) else x
    if type(x) in _WEAK_TYPES:
        return type(x) if NEP50 else x
    if isinstance(x, np.dtype):
        return x
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return np.dtype(dtype)
    if isinstance(x, type) and x in _WEAK_TYPES:
        return x
    return np.dtype(x)


def result_type(*operands):
    """np.result_type over arrays (anything with .dtype), dtypes and Python scalars, the scalars
    weak as in NumPy's own arithmetic."""
    args = []
    for x in operands:
        p = _promotion_operand(x)
        if isinstance(p, type):
            p = p(0) if p is not bool else False  # result_type wants values for weak types
        args.append(p)
    return np.result_type(*args)


def resolve_ufunc(ufunc, operands, nout=1):
    """The loop dtypes NumPy uses for ``ufunc(*operands)``: (input dtypes..., output dtypes...).

    Operands are dtypes, arrays or Python scalars (weak). Raises NumPy's own TypeError
    (UFuncTypeError) when the ufunc has no loop for them, e.g. bool subtract."""
    ops = [_promotion_operand(x) for x in operands]
    if not NEP50:  # pragma: no cover - NumPy 1.x: let value-based casting pick dtypes
        ops = [np.result_type(x) if not isinstance(x, np.dtype) else x for x in ops]
    return ufunc.resolve_dtypes(tuple(ops) + (None,) * nout)
