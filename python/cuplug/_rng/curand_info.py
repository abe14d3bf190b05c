"""cuRAND's version and direction-vector sets: exported by cuplug.curandom and, as PyCUDA's
_driver exports them, by cuplug.driver; here below both, importing only the extension."""

from __future__ import annotations

import enum

from cuplug import _core


class direction_vector_set(enum.IntEnum):  # noqa: N801 (PyCUDA's name)
    """cuRAND's direction-vector sets (curandDirectionVectorSet_t)."""

    VECTOR_32 = 101
    SCRAMBLED_VECTOR_32 = 102
    VECTOR_64 = 103
    SCRAMBLED_VECTOR_64 = 104


def curand_backend():
    return _core.rng.backend("curand")


def get_curand_version():
    """cuRAND's version as PyCUDA reports it, (v // 1000, v % 1000 // 10, v % 10) of
    curandGetVersion, or None when the curand backend is not available."""
    try:
        version = curand_backend().library_version
    except _core.Error:
        return None
    return (version // 1000, version % 1000 // 10, version % 10)
