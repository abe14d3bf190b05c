"""cuRAND's Sobol tables and PyCUDA's Sobol device-API generators (cuplug.curandom).

The tables (direction vectors of the four direction-vector sets, 32- and 64-bit scramble
constants) are copied out of cuRAND by the curand rng backend; PyCUDA repeats cuRAND's 20000
dimensions for more generators than that. The generators' default tables are one copy of at
most 20000 rows per live context, kept in the per-context cache and gone with the context, whose
row i % rows the prepare kernel of generator i reads."""

from __future__ import annotations

import numpy as np

from cuplug import _core
from cuplug._array.core import GPUArray
from cuplug._driver import context_cache

from . import device_kernels as kernels
from .curand_info import curand_backend, direction_vector_set
from .device_generators import _DeviceGenerator, to_device

__all__ = [
    "ScrambledSobol32RandomNumberGenerator",
    "ScrambledSobol64RandomNumberGenerator",
    "Sobol32RandomNumberGenerator",
    "Sobol64RandomNumberGenerator",
    "generate_direction_vectors",
    "generate_scramble_constants32",
    "generate_scramble_constants64",
]

_SOBOL_DIMENSIONS = 20000  # of every cuRAND table
_DIRECTION_TABLES = {
    direction_vector_set.VECTOR_32: ("sobol32_directions", np.uint32, 32),
    direction_vector_set.SCRAMBLED_VECTOR_32: ("scrambled_sobol32_directions", np.uint32, 32),
    direction_vector_set.VECTOR_64: ("sobol64_directions", np.uint64, 64),
    direction_vector_set.SCRAMBLED_VECTOR_64: ("scrambled_sobol64_directions", np.uint64, 64),
}


def host_table(table, count, dtype, width):
    """`count` rows of a cuRAND table in host memory; PyCUDA repeats cuRAND's 20000 dimensions
    for more generators than that."""
    count = int(count)
    if count < 0:
        raise ValueError(f"count must not be negative, got {count}")
    result = np.empty((count, width) if width > 1 else (count,), dtype)
    backend = curand_backend()
    for start in range(0, count, _SOBOL_DIMENSIONS):
        rows = min(_SOBOL_DIMENSIONS, count - start)
        backend.copy_table(table, 0, rows * width, result[start : start + rows])
    return result


def _table(table, count, dtype, width):
    return to_device(host_table(table, count, dtype, width))


def _default_table(table, count, dtype, width):
    """The first min(count, 20000) rows of a cuRAND table (a GPUArray), read (never written) by
    the Sobol generators' prepare kernels: one per live context, gone with it (context_cache)."""
    rows = min(int(count), _SOBOL_DIMENSIONS)
    return context_cache.lookup(
        _core.Context.get_current(adopt=True),
        ("sobol table", table, rows),
        lambda: _table(table, rows, dtype, width),
    )


def generate_direction_vectors(count, direction=None):
    """cuRAND's Sobol direction vectors for `count` generators: a (count, 32) uint32 GPUArray,
    (count, 64) uint64 for the 64-bit sets. direction=None means VECTOR_32.

    Parameters
    ----------
    count : int
        Generators (dimensions).
    direction : direction_vector_set | None
        Which set; None: VECTOR_32.

    Returns
    -------
    GPUArray
        The vectors.
    """
    if direction is None:
        direction = direction_vector_set.VECTOR_32
    try:
        table, dtype, width = _DIRECTION_TABLES[direction_vector_set(direction)]
    except ValueError:
        raise ValueError(f"direction must be a direction_vector_set, got {direction!r}") from None
    return _table(table, count, dtype, width)


def generate_scramble_constants32(count):
    """cuRAND's 32-bit scramble constants for `count` generators (uint32 GPUArray).

    Parameters
    ----------
    count : int
        Generators (dimensions).

    Returns
    -------
    GPUArray
        The constants.
    """
    return _table("scramble32_constants", count, np.uint32, 1)


def generate_scramble_constants64(count):
    """cuRAND's 64-bit scramble constants for `count` generators (uint64 GPUArray).

    Parameters
    ----------
    count : int
        Generators (dimensions).

    Returns
    -------
    GPUArray
        The constants.
    """
    return _table("scramble64_constants", count, np.uint64, 1)


class _SobolGenerator(_DeviceGenerator):
    """Sobol's quasi-random sequences: generator k draws dimension k, from direction vectors
    (and, scrambled, scramble constants) instead of a seed."""

    _direction_set = direction_vector_set.VECTOR_32
    _scramble = None  # the scramble-constant function of the scrambled kinds

    @classmethod
    def _init_source(cls):
        return kernels.sobol_prepare_source(
            cls.state_type, cls.generator_bits, cls._scramble is not None
        )

    def __init__(self, dir_vector=None, scramble_vector=None, offset=0):
        super().__init__()
        wide = self.generator_bits == 64
        dtype, width = (np.uint64, 64) if wide else (np.uint32, 32)
        count = self.generator_count
        # The default tables repeat cuRAND's 20000 dimensions (as PyCUDA's do): the kernel reads
        # row i % rows of one copy, kept per context, instead of a fresh table of `count` rows
        # (17 MB for 132 SMs, which took 11 ms of the 17 ms a Sobol32 generator took to make).
        rows = count
        default_dir = dir_vector is None
        if default_dir:
            dir_vector = _default_table(
                _DIRECTION_TABLES[direction_vector_set(self._direction_set)][0], count, dtype, width
            )
            rows = dir_vector.shape[0]
        elif not (
            isinstance(dir_vector, GPUArray)
            and dir_vector.dtype == dtype
            and dir_vector.shape == (count, width)
        ):
            raise TypeError("seed must be GPUArray of integers of right length")
        args = [dir_vector.gpudata]
        if self._scramble:
            if scramble_vector is None and default_dir:
                scramble_vector = _default_table(self._scramble_table, count, dtype, 1)
            else:
                if scramble_vector is None:
                    scramble_vector = self._scramble(count)
                if not (
                    isinstance(scramble_vector, GPUArray)
                    and scramble_vector.dtype == dtype
                    and scramble_vector.shape == (count,)
                ):
                    raise TypeError("scramble must be GPUArray of integers of right length")
                if default_dir and rows < count:  # the user's constants, default vectors: full
                    rows = count
                    dir_vector = self._full_default_vectors(count, dtype, width)
                    args = [dir_vector.gpudata]
            args.append(scramble_vector.gpudata)
        self._tables = (dir_vector, scramble_vector)  # alive while the kernel may read them
        self._prepare.prepare("Pn" + "P" * len(args) + "nn")
        self._initialise(*args, np.uintp(rows), np.uintp(offset))

    def _full_default_vectors(self, count, dtype, width):
        table = _DIRECTION_TABLES[direction_vector_set(self._direction_set)][0]
        return _table(table, count, dtype, width)


class Sobol32RandomNumberGenerator(_SobolGenerator):
    """cuRAND's Sobol32: generator k draws dimension k (direction vectors dir_vector[k])."""

    state_type = "curandStateSobol32"

    def __init__(self, dir_vector=None, offset=0):
        super().__init__(dir_vector, None, offset)


class ScrambledSobol32RandomNumberGenerator(_SobolGenerator):
    """cuRAND's scrambled Sobol32."""

    state_type = "curandStateScrambledSobol32"
    _direction_set = direction_vector_set.SCRAMBLED_VECTOR_32
    _scramble = staticmethod(generate_scramble_constants32)
    _scramble_table = "scramble32_constants"


class Sobol64RandomNumberGenerator(_SobolGenerator):
    """cuRAND's Sobol64."""

    state_type = "curandStateSobol64"
    generator_bits = 64
    _direction_set = direction_vector_set.VECTOR_64

    def __init__(self, dir_vector=None, offset=0):
        super().__init__(dir_vector, None, offset)


class ScrambledSobol64RandomNumberGenerator(_SobolGenerator):
    """cuRAND's scrambled Sobol64."""

    state_type = "curandStateScrambledSobol64"
    generator_bits = 64
    _direction_set = direction_vector_set.SCRAMBLED_VECTOR_64
    _scramble = staticmethod(generate_scramble_constants64)
    _scramble_table = "scramble64_constants"
