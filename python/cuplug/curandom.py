"""PyCUDA's ``pycuda.curandom`` for cuplug.

``rand()`` draws from the selected rng backend (``cuplug.use(rng="philox" | "curand")``; PyCUDA's
was an MD5 toy that compiled a kernel per call). The generator classes are PyCUDA's: cuRAND's
device API in kernels compiled through the compiler backend (cached), one state per thread, the
same values as PyCUDA for the same seeds. ``PhiloxRandomNumberGenerator`` (not in PyCUDA) is a
counter-based generator over the rng backends, with the same fill_* / gen_* methods and no state
array. Where PyCUDA is broken cuplug differs: ``call_skip_ahead`` moves every generator, not only
the first block's (docs/rng.md).

A facade: the generators, the Sobol tables and the stream behind ``rand()`` are in cuplug._rng.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cuplug._array.core import GPUArray as _GPUArray
from cuplug._public import public_dir as _public_dir

# Defined below cuplug.driver, which exports them too (as PyCUDA's _driver does).
from cuplug._rng.curand_info import direction_vector_set, get_curand_version
from cuplug._rng.device_generators import (
    MRG32k3aRandomNumberGenerator,
    XORWOWRandomNumberGenerator,
    seed_getter_uniform,
    seed_getter_unique,
)
from cuplug._rng.philox import PhiloxRandomNumberGenerator
from cuplug._rng.sobol import (
    ScrambledSobol32RandomNumberGenerator,
    ScrambledSobol64RandomNumberGenerator,
    Sobol32RandomNumberGenerator,
    Sobol64RandomNumberGenerator,
    generate_direction_vectors,
    generate_scramble_constants32,
    generate_scramble_constants64,
)
from cuplug._rng.stream import FLOAT_DTYPES as _FLOAT_DTYPES
from cuplug._rng.stream import Stream as _Stream
from cuplug._rng.stream import random_seed as _random_seed

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = [
    "MRG32k3aRandomNumberGenerator",
    "PhiloxRandomNumberGenerator",
    "ScrambledSobol32RandomNumberGenerator",
    "ScrambledSobol64RandomNumberGenerator",
    "Sobol32RandomNumberGenerator",
    "Sobol64RandomNumberGenerator",
    "XORWOWRandomNumberGenerator",
    "direction_vector_set",
    "generate_direction_vectors",
    "generate_scramble_constants32",
    "generate_scramble_constants64",
    "get_curand_version",
    "rand",
    "seed_getter_uniform",
    "seed_getter_unique",
]


# ---- rand ----------------------------------------------------------------------------------

_rand_stream = None


def rand(shape, dtype: DTypeLike = np.float32, stream=None) -> _GPUArray:
    """A GPUArray of uniform values in (0, 1] (float32, float64) or random bits (int32,
    uint32), from the selected rng backend, continuing one process-wide stream.

    Parameters
    ----------
    shape : int | tuple[int, ...]
        The result's shape, in elements.
    dtype : numpy.typing.DTypeLike
        float32, float64, int32 or uint32.
    stream : Stream | None
        The stream the fill is ordered on.

    Returns
    -------
    GPUArray
        The values.
    """
    global _rand_stream
    dtype = np.dtype(dtype)
    if dtype not in _FLOAT_DTYPES and dtype not in (np.int32, np.uint32):
        raise NotImplementedError(f"rand makes float32, float64, int32 or uint32, not {dtype}")
    if _rand_stream is None:
        _rand_stream = _Stream(_random_seed())
    result = _GPUArray(shape, dtype)
    if dtype in _FLOAT_DTYPES:
        return _rand_stream.fill_float("uniform", result, stream)
    return _rand_stream.fill_bits(result, stream)


__dir__ = _public_dir(__all__)
