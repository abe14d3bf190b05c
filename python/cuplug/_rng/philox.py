"""PhiloxRandomNumberGenerator (cuplug.curandom; not in PyCUDA): PyCUDA's generator interface
(fill_* / gen_* / call_skip_ahead) over the counter-based stream of stream.py, so a seed and an
offset instead of a state per thread, and values bit-identical to cuRAND's PHILOX4_32_10 from
either rng backend."""

from __future__ import annotations

import numpy as np

from cuplug import _core

from .device_generators import _DeviceGenerator
from .stream import FLOAT_DTYPES, Stream, random_seed

__all__ = ["PhiloxRandomNumberGenerator"]


def _philox_stream(seed, offset, backend):
    """The stream of a PhiloxRandomNumberGenerator: the philox backend where it is installed,
    else cuRAND's Philox (the same values)."""
    if backend is None:
        philox_loaded = _core.backends.unavailable_reason("rng", "philox") is None
        backend = "philox" if philox_loaded else "curand"
    options = {"generator": "philox"} if backend == "curand" else {}
    return Stream(seed, offset, backend, options)


class PhiloxRandomNumberGenerator:
    """Philox4x32-10, counter-based: a seed and an offset instead of a state per thread, values
    bit-identical to cuRAND's PHILOX4_32_10 generator. ``backend`` is "philox" (cuplug's
    kernels, the default when installed) or "curand" (cuRAND's Philox); both give the same
    values. Not in PyCUDA."""

    has_box_muller = True
    generator_bits = 32

    def __init__(self, seed=None, offset=0, backend=None):
        self._stream = _philox_stream(random_seed() if seed is None else seed, offset, backend)

    @property
    def seed(self):
        """The seed, an int in [0, 2**64)."""
        return self._stream.seed

    @property
    def offset(self):
        """Where the next fill starts: one position per value drawn."""
        return self._stream.offset

    @property
    def backend(self):
        """The rng backend drawing the values ("philox" or "curand")."""
        return self._stream.backend

    def fill_uniform(self, data, stream=None):
        """Fills ``data`` with uniform values: floats in (0, 1], or random bits for integers.

        Parameters
        ----------
        data : GPUArray
            float32, float64, (u)int32 or (u)int64 elements, all overwritten.
        stream : Stream, optional
            The stream the fill is ordered on.
        """
        if data.dtype in FLOAT_DTYPES:
            self._stream.fill_float("uniform", data, stream)
        elif data.dtype in (np.int32, np.uint32, np.int64, np.uint64):
            self._stream.fill_bits(data, stream)
        else:
            raise NotImplementedError

    def fill_normal(self, data, stream=None):
        """Fills ``data`` with standard normal values (mean 0, standard deviation 1).

        Parameters
        ----------
        data : GPUArray
            float32 or float64 elements, all overwritten.
        stream : Stream, optional
            The stream the fill is ordered on.
        """
        if data.dtype not in FLOAT_DTYPES:
            raise NotImplementedError
        self._stream.fill_float("normal", data, stream)

    def fill_log_normal(self, data, mean, stddev, stream=None):
        """Fills ``data`` with log-normal values: exp of normal values of ``mean``, ``stddev``.

        Parameters
        ----------
        data : GPUArray
            float32 or float64 elements, all overwritten.
        mean, stddev : float
            The underlying normal distribution's mean and standard deviation.
        stream : Stream, optional
            The stream the fill is ordered on.
        """
        if data.dtype not in FLOAT_DTYPES:
            raise NotImplementedError
        self._stream.fill_float("lognormal", data, stream, mean=mean, stddev=stddev)

    def fill_poisson(self, data, lambda_value=None, stream=None):
        """Fills ``data`` with Poisson counts of mean ``lambda_value``.

        Parameters
        ----------
        data : GPUArray
            uint32 elements, all overwritten.
        lambda_value : float
            The mean (required: per-element means need a device-API generator).
        stream : Stream, optional
            The stream the fill is ordered on.
        """
        if lambda_value is None:
            raise NotImplementedError(
                "PhiloxRandomNumberGenerator draws Poisson counts of one mean per call; "
                "per-element means need a device-API generator (XORWOWRandomNumberGenerator)"
            )
        if data.dtype != np.uint32:
            raise NotImplementedError
        self._stream.fill_poisson(data, lambda_value, stream)

    gen_uniform = _DeviceGenerator.gen_uniform
    gen_normal = _DeviceGenerator.gen_normal
    gen_log_normal = _DeviceGenerator.gen_log_normal
    gen_poisson = _DeviceGenerator.gen_poisson
    _gen = _DeviceGenerator._gen

    def call_skip_ahead(self, i, stream=None):
        """Moves the stream `i` values on.

        Parameters
        ----------
        i : int
            Values to skip.
        stream : Stream | None
            Ignored: skipping moves the offset on the host.
        """
        self._stream.restart(self._stream.seed, self._stream.offset + int(i))
