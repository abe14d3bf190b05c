"""C kernel-argument declarations ("const float *x", "int n") as PyCUDA's Argument objects:
VectorArg / ScalarArg with their dtype, C declarator and struct format character. Used by the
element-wise and reduction kernel builders; cuplug.tools re-exports the names (PyCUDA users
import them from pycuda.tools)."""

from __future__ import annotations

import re

import numpy as np

__all__ = ["Argument", "ScalarArg", "VectorArg", "get_arg_type", "parse_c_arg"]

from cuplug._dtypes import TypeNameNotKnown, dtype_to_ctype, get_or_register_dtype


def _dtype_to_ctype(dtype):
    return dtype_to_ctype(dtype)


def _dtype_of_c_name(c_name):
    try:
        return get_or_register_dtype(c_name)
    except TypeNameNotKnown:
        raise ValueError(
            f"unknown type '{c_name}' (register it with cuplug.tools.get_or_register_dtype)"
        ) from None


_QUALIFIERS = ("const", "volatile", "__restrict__", "restrict")
_DECLARATOR = re.compile(r"(\**)\s*([_a-zA-Z0-9]+)(\s*\[[ 0-9]*\])*\s*$")


class Argument:
    def __init__(self, dtype, name):
        self.dtype = np.dtype(dtype)
        self.name = name

    def __repr__(self):
        return f"{self.__class__.__name__}({self.name!r}, {self.dtype})"


class VectorArg(Argument):
    struct_char = "P"

    def declarator(self):
        return f"{_dtype_to_ctype(self.dtype)} *{self.name}"


class ScalarArg(Argument):
    def declarator(self):
        return f"{_dtype_to_ctype(self.dtype)} {self.name}"

    @property
    def struct_char(self):
        result = self.dtype.char
        if result == "V":
            result = f"{self.dtype.itemsize}s"
        return result


def parse_c_arg(c_arg):
    """ScalarArg or VectorArg of a C declaration such as "const float *x" or "int n"."""
    for qualifier in _QUALIFIERS:
        c_arg = c_arg.replace(qualifier, "")

    decl_match = _DECLARATOR.search(c_arg)
    if decl_match is None:
        raise ValueError(f"couldn't parse C declarator '{c_arg}'")

    name = decl_match.group(2)
    is_vector = decl_match.group(1) or decl_match.group(3) is not None
    dtype = _dtype_of_c_name(" ".join(c_arg[: decl_match.start()].split()))
    return (VectorArg if is_vector else ScalarArg)(dtype, name)


def get_arg_type(c_arg):
    """The struct format character of a C declaration ("P" for pointers)."""
    return parse_c_arg(c_arg).struct_char
