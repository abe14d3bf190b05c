"""CUDA's vector types as NumPy dtypes (PyCUDA's gpuarray.vec): vec.float4, vec.make_float4(...).
Each is registered under its C name, so kernels can take and hold them."""

from __future__ import annotations

import inspect

import numpy as np

from cuplug._dtypes import get_or_register_dtype

__all__ = ["vec"]

_XYZW = ("x", "y", "z", "w")


class vec:  # noqa: N801 (PyCUDA's name)
    """Namespace of vector dtypes: char1..4, uchar1..4, short1..4, ushort1..4, int1..4,
    uint1..4, long1..4, ulong1..4, longlong1..2, ulonglong1..2, float1..4, double1..2, and
    make_<name>(x, ...) giving a 0-d ndarray of that dtype."""


def _by_name(where, args, fields, titles):
    """The field values of ``make_<type>(..., x=, y=, ...)`` in order, as PyCUDA's
    ``lambda x, y, z: ...`` takes them."""
    unknown = sorted(set(fields) - set(titles))
    if unknown:
        raise TypeError(
            f"{where}() got unexpected keyword argument(s) {', '.join(unknown)}; its fields are "
            f"{', '.join(titles)}"
        )
    twice = [t for t in titles[: len(args)] if t in fields]
    if twice:
        raise TypeError(f"{where}() got multiple values for argument {twice[0]!r}")
    missing = [t for t in titles[len(args) :] if t not in fields]
    if missing:
        raise TypeError(f"{where}() missing field value(s) {', '.join(missing)}")
    return tuple(args) + tuple(fields[t] for t in titles[len(args) :])


def _create_vector_types():
    field_names = ["x", "y", "z", "w"]
    vec.types = {}
    vec.type_to_scalar_and_count = {}
    for base_name, base_type, counts in [
        ("char", np.int8, [1, 2, 3, 4]),
        ("uchar", np.uint8, [1, 2, 3, 4]),
        ("short", np.int16, [1, 2, 3, 4]),
        ("ushort", np.uint16, [1, 2, 3, 4]),
        ("int", np.int32, [1, 2, 3, 4]),
        ("uint", np.uint32, [1, 2, 3, 4]),
        ("long", np.int64, [1, 2, 3, 4]),
        ("ulong", np.uint64, [1, 2, 3, 4]),
        ("longlong", np.int64, [1, 2]),
        ("ulonglong", np.uint64, [1, 2]),
        ("float", np.float32, [1, 2, 3, 4]),
        ("double", np.float64, [1, 2]),
    ]:
        for count in counts:
            name = f"{base_name}{count}"
            titles = field_names[:count]
            names = [f"s{i}" for i in range(count)]
            dtype = np.dtype({"names": names, "formats": [base_type] * count, "titles": titles})
            dtype = get_or_register_dtype(name, dtype)
            setattr(vec, name, dtype)

            def create(*args, _dtype=dtype, _count=count, _name=name, **fields):
                if fields:  # PyCUDA's keywords: make_float3(x=1, y=2, z=3)
                    args = _by_name(f"make_{_name}", args, fields, _XYZW[:_count])
                if len(args) == 1 and _count > 1:
                    args = tuple(args[0])
                if len(args) != _count:
                    raise TypeError(f"expected {_count} values, got {len(args)}")
                result = np.empty((), _dtype)
                for i, value in enumerate(args):
                    result[f"s{i}"] = value
                return result

            create.__name__ = create.__qualname__ = f"make_{name}"
            create.__signature__ = inspect.Signature(
                [inspect.Parameter(t, inspect.Parameter.POSITIONAL_OR_KEYWORD) for t in titles]
            )
            fields = ", ".join(titles)
            create.__doc__ = f"""A CUDA ``{name}`` value: a 0-d ndarray of dtype ``vec.{name}``.

            Parameters
            ----------
            {fields} : {np.dtype(base_type).name}
                The {count} field value{"s" if count > 1 else ""}, by position or name (or
                one sequence of them).
            """
            setattr(vec, f"make_{name}", staticmethod(create))
            vec.types[np.dtype(base_type), count] = dtype
            vec.type_to_scalar_and_count[dtype] = np.dtype(base_type), count


_create_vector_types()
