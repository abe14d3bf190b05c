"""C kernel-argument declarations ("const float *x", "int n") as PyCUDA's Argument objects:
VectorArg / ScalarArg with their dtype, C declarator and struct format character. Used by the
element-wise and reduction kernel builders; cuplug.tools re-exports the names (PyCUDA users
import them from pycuda.tools)."""

from __future__ import annotations

import re

import numpy as np

# PyCUDA's pycuda.tools names (cuplug.tools re-exports them); parse_arguments is the kernel
# generators' own.
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
    """A kernel argument parsed from a C declaration: its NumPy ``dtype`` and ``name``."""

    def __init__(self, dtype, name):
        self.dtype = np.dtype(dtype)
        self.name = name

    def __repr__(self):
        return f"{self.__class__.__name__}({self.name!r}, {self.dtype})"


class VectorArg(Argument):
    """A pointer argument (``float *x``): device memory of ``dtype`` elements."""

    struct_char = "P"

    def declarator(self):
        """The C declaration, e.g. ``float *x``."""
        return f"{_dtype_to_ctype(self.dtype)} *{self.name}"


class ScalarArg(Argument):
    """A scalar argument (``float a``) passed by value."""

    def declarator(self):
        """The C declaration, e.g. ``float a``."""
        return f"{_dtype_to_ctype(self.dtype)} {self.name}"

    @property
    def struct_char(self):
        """The argument's struct module format character (``'f'``, ``'i'``, ...)."""
        result = self.dtype.char
        if result == "V":
            result = f"{self.dtype.itemsize}s"
        return result


def parse_c_arg(c_arg):
    """ScalarArg or VectorArg of a C declaration such as "const float *x" or "int n".

    Parameters
    ----------
    c_arg : str
        One C parameter declaration.

    Returns
    -------
    ScalarArg | VectorArg
        The argument.
    """
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
    """The struct format character of a C declaration ("P" for pointers).

    Parameters
    ----------
    c_arg : str
        One C parameter declaration.

    Returns
    -------
    str
        Its struct format character.
    """
    return parse_c_arg(c_arg).struct_char


#: Names the generated elementwise kernels use themselves (besides ``cuplug_*``).
KERNEL_NAMES = ("i", "n", "tid", "total_threads", "cta_start")


def parse_arguments(arguments, taken=KERNEL_NAMES) -> list:
    """VectorArg/ScalarArg list of a C argument list ("float *z, const float *x, int n") or of
    a list of VectorArg/ScalarArg (returned as a list). ValueError naming the bad declaration;
    duplicate names and names the generated kernel uses itself (``taken``, ``cuplug_*``) are
    refused.

    Parameters
    ----------
    arguments : str | list[Argument]
        A C argument list, or arguments already parsed.
    taken : collections.abc.Collection[str]
        Names the arguments may not have.

    Returns
    -------
    list[Argument]
        The arguments.
    """
    if isinstance(arguments, str):
        parts = [p.strip() for p in arguments.split(",")]
        if not arguments.strip() or any(not p for p in parts):
            raise ValueError(
                f"argument list {arguments!r} has an empty declaration: expected "
                "'type *vector, type scalar, ...'"
            )
        parsed = []
        for p in parts:
            try:
                parsed.append(parse_c_arg(p))
            except ValueError as e:
                raise ValueError(
                    f"cannot read argument {p!r} of {arguments!r}: {e}; declare vectors as "
                    "'float *x' and scalars as 'float a' with a registered C type name "
                    "(cuplug.tools.get_or_register_dtype registers more)"
                ) from None
    else:
        try:
            parsed = list(arguments)
        except TypeError:
            raise TypeError(
                "arguments must be a C declaration string ('float *z, const float *x') or a "
                f"list of VectorArg/ScalarArg objects, got {type(arguments).__name__}"
            ) from None
        for a in parsed:
            if not isinstance(a, (VectorArg, ScalarArg)):
                raise TypeError(
                    f"arguments must be a C declaration string or VectorArg/ScalarArg objects, "
                    f"got {type(a).__name__}"
                )
    names = [a.name for a in parsed]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"argument name(s) {', '.join(dup)} declared more than once")
    reserved = [n for n in names if n in taken or n.startswith("cuplug_")]
    if reserved:
        raise ValueError(
            f"argument name(s) {', '.join(reserved)} are taken by the generated kernel "
            f"({', '.join(taken)}, cuplug_*)"
        )
    return parsed
