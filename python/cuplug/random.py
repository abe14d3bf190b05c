"""Random numbers into GPUArrays with NumPy's ``Generator`` interface, over the selected rng
backend: ``cuplug.random.default_rng(seed).normal(size=(1000,))``.

A Generator is a counter-based stream: its state is a seed and an offset (``.state``, which can
be saved and put back), and each call's values depend only on them, so the philox and curand
backends (cuRAND's Philox) give the same values. ``backend=None`` follows ``cuplug.use(rng=...)``
call by call; a name fixes the backend. Every method takes ``out=`` (a contiguous GPUArray to
fill), ``dtype=`` (float64, int64 for integers and poisson, unless ``out=`` has another) and
``stream=`` (the work is ordered on that stream). Where cuRAND and NumPy
differ, the values are cuRAND's: uniform values lie in (0, 1], not [0, 1).
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from cuplug._array.core import GPUArray as _GPUArray
from cuplug._public import public_dir as _public_dir
from cuplug._rng import integers as _integers
from cuplug._rng.stream import FLOAT_DTYPES as _FLOAT_DTYPES
from cuplug._rng.stream import Stream as _Stream
from cuplug._rng.stream import random_seed as _random_seed

__all__ = ["Generator", "default_rng"]

_INTEGER_DTYPES = tuple(_integers.INTEGER_CTYPES)


def _shape(size):
    if size is None:
        return ()
    if isinstance(size, numbers.Integral):
        return (operator.index(size),)
    return tuple(operator.index(s) for s in size)


def _scalar(value, what):
    if isinstance(value, (numbers.Real, np.number)) and not isinstance(value, bool):
        return float(value)
    raise NotImplementedError(
        f"{what} must be a number here (arrays of parameters are not supported); got "
        f"{type(value).__name__}"
    )


class Generator:
    """Random values from an rng backend; see the module's documentation."""

    def __init__(self, seed=None, backend=None):
        if backend is not None and not isinstance(backend, str):
            raise TypeError(f"backend must be an rng backend name or None, not {backend!r}")
        self._stream = _Stream(_random_seed() if seed is None else seed, 0, backend)

    def __repr__(self):
        s = self._stream
        return f"Generator(seed={s.seed}, offset={s.offset}, backend={s.backend!r})"

    # ---- state ------------------------------------------------------------------------------

    @property
    def seed(self) -> int:
        """The seed, an int in [0, 2**64)."""
        return self._stream.seed

    @property
    def offset(self) -> int:
        """Where the next call starts: one position per value drawn."""
        return self._stream.offset

    @property
    def backend(self) -> str | None:
        """The rng backend drawing the values; None: the selected one at each call."""
        return self._stream.backend

    @property
    def state(self) -> dict:
        """``{"seed": ..., "offset": ..., "backend": ...}``; assign it back to replay from there."""
        s = self._stream
        return {"seed": s.seed, "offset": s.offset, "backend": s.backend}

    @state.setter
    def state(self, value):
        try:
            seed, offset, backend = value["seed"], value.get("offset", 0), value.get("backend")
        except (TypeError, KeyError, AttributeError):
            raise TypeError(
                "state must be a mapping with 'seed' (and 'offset', 'backend') as .state returns"
            ) from None
        self._stream.backend = backend
        self._stream.restart(seed, offset)

    # ---- helpers ----------------------------------------------------------------------------

    def _target(self, size, dtype, out, allowed, what, default=np.float64):
        if out is not None:
            if dtype is not None and np.dtype(dtype) != out.dtype:
                raise TypeError(
                    f"{what}: out has dtype {out.dtype}, dtype= asks for {np.dtype(dtype)}"
                )
            if size is not None and _shape(size) != out.shape:
                raise ValueError(f"{what}: out has shape {out.shape}, size= asks for {size}")
            result = out
        else:
            result = _GPUArray(_shape(size), np.dtype(default if dtype is None else dtype))
        if result.dtype not in allowed:
            names = ", ".join(d.name for d in allowed)
            raise TypeError(f"{what}: dtype must be one of {names}, got {result.dtype}")
        return result

    # ---- distributions ----------------------------------------------------------------------

    def random(self, size=None, dtype=None, out=None, stream=None):
        """Uniform values in (0, 1] (cuRAND's interval; NumPy's is [0, 1)).

        Parameters
        ----------
        size : int | tuple[int, ...] | None
            The result's shape, in elements; None: one value.
        dtype : numpy.typing.DTypeLike | None
            The element type; None: float64 (int64 for integers), or ``out``'s.
        out : GPUArray | None
            An array to fill instead of a new one.
        stream : Stream | None
            The stream the fill is ordered on.

        Returns
        -------
        GPUArray
            The values (``out`` when given).
        """
        result = self._target(size, dtype, out, _FLOAT_DTYPES, "random")
        return self._stream.fill_float("uniform", result, stream, "out")

    def uniform(self, low=0.0, high=1.0, size=None, dtype=None, out=None, stream=None):
        """Uniform values in (low, high].

        Parameters
        ----------
        low, high : float
            The interval's ends.
        size : int | tuple[int, ...] | None
            The result's shape, in elements; None: one value.
        dtype : numpy.typing.DTypeLike | None
            The element type; None: float64 (int64 for integers), or ``out``'s.
        out : GPUArray | None
            An array to fill instead of a new one.
        stream : Stream | None
            The stream the fill is ordered on.

        Returns
        -------
        GPUArray
            The values (``out`` when given).
        """
        low, high = _scalar(low, "low"), _scalar(high, "high")
        result = self.random(size, dtype, out, stream)
        if (low, high) != (0.0, 1.0):
            result *= high - low
            result += low
        return result

    def standard_normal(self, size=None, dtype=None, out=None, stream=None):
        """Normal values of mean 0 and standard deviation 1 (``normal(0, 1, ...)``).

        Parameters
        ----------
        size : int | tuple[int, ...], optional
            The result's shape, in elements; None: one value.
        dtype : numpy.typing.DTypeLike, optional
            float32 or float64 (the default).
        out : GPUArray, optional
            An array to fill instead of a new one.
        stream : Stream, optional
            The stream the fill is ordered on.
        """
        return self.normal(0.0, 1.0, size, dtype, out, stream)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=None, out=None, stream=None):
        """Normal values (Box-Muller, as cuRAND: an odd size takes one more value than it
        keeps).

        Parameters
        ----------
        loc : float
            The mean.
        scale : float
            The standard deviation (positive).
        size : int | tuple[int, ...] | None
            The result's shape, in elements; None: one value.
        dtype : numpy.typing.DTypeLike | None
            The element type; None: float64 (int64 for integers), or ``out``'s.
        out : GPUArray | None
            An array to fill instead of a new one.
        stream : Stream | None
            The stream the fill is ordered on.

        Returns
        -------
        GPUArray
            The values (``out`` when given).
        """
        loc, scale = _scalar(loc, "loc"), _scalar(scale, "scale")
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        result = self._target(size, dtype, out, _FLOAT_DTYPES, "normal")
        return self._stream.fill_float("normal", result, stream, "out", mean=loc, stddev=scale)

    def lognormal(self, mean=0.0, sigma=1.0, size=None, dtype=None, out=None, stream=None):
        """exp of normal values with that mean and sigma.

        Parameters
        ----------
        mean : float
            The underlying normal distribution's mean.
        sigma : float
            Its standard deviation (positive).
        size : int | tuple[int, ...] | None
            The result's shape, in elements; None: one value.
        dtype : numpy.typing.DTypeLike | None
            The element type; None: float64 (int64 for integers), or ``out``'s.
        out : GPUArray | None
            An array to fill instead of a new one.
        stream : Stream | None
            The stream the fill is ordered on.

        Returns
        -------
        GPUArray
            The values (``out`` when given).
        """
        mean, sigma = _scalar(mean, "mean"), _scalar(sigma, "sigma")
        if not sigma > 0:
            raise ValueError(f"sigma must be positive, got {sigma}")
        result = self._target(size, dtype, out, _FLOAT_DTYPES, "lognormal")
        return self._stream.fill_float("lognormal", result, stream, "out", mean=mean, stddev=sigma)

    def poisson(self, lam=1.0, size=None, dtype=None, out=None, stream=None):
        """Poisson counts with mean `lam` (the backend makes uint32; other integer dtypes are
        converted).

        Parameters
        ----------
        lam : float
            The mean (non-negative).
        size : int | tuple[int, ...] | None
            The result's shape, in elements; None: one value.
        dtype : numpy.typing.DTypeLike | None
            An integer type; None: int64.
        out : GPUArray | None
            An array to fill instead of a new one.
        stream : Stream | None
            The stream the fill is ordered on.

        Returns
        -------
        GPUArray
            The values (``out`` when given).
        """
        lam = _scalar(lam, "lam")
        if not lam >= 0:
            raise ValueError(f"lam must be non-negative, got {lam}")
        result = self._target(size, dtype, out, _INTEGER_DTYPES, "poisson", np.int64)
        if lam == 0:
            return result.fill(0, stream=stream)
        return _integers.fill_poisson(self._stream, result, lam, stream, fresh=out is None)

    def integers(
        self, low, high=None, size=None, dtype=None, endpoint=False, out=None, stream=None
    ):
        """Integers in [low, high) ([low, high] with endpoint=True); [0, low) without high.
        Each value takes two 32-bit words (x) and is low + floor(x · range / 2^64): off from
        uniform by at most range / 2^64.

        Parameters
        ----------
        low : int
            The smallest value (the exclusive end when ``high`` is None).
        high : int | None
            The end of the range.
        size : int | tuple[int, ...] | None
            The result's shape, in elements; None: one value.
        dtype : numpy.typing.DTypeLike | None
            An integer type; None: int64.
        endpoint : bool
            Whether ``high`` itself may be drawn.
        out : GPUArray | None
            An array to fill instead of a new one.
        stream : Stream | None
            The stream the fill is ordered on.

        Returns
        -------
        GPUArray
            The values (``out`` when given).
        """
        if high is None:
            low, high = 0, low
        low, high = operator.index(low), operator.index(high)
        if endpoint:
            high += 1
        result = self._target(size, dtype, out, _INTEGER_DTYPES, "integers", np.int64)
        info = np.iinfo(result.dtype)
        if not (info.min <= low and high - 1 <= info.max and low < high):
            raise ValueError(
                f"integers: [{low}, {high}) is empty or does not fit {result.dtype} "
                f"([{info.min}, {info.max}])"
            )
        return _integers.fill_integers(self._stream, result, low, high, stream)

    def bytes(self, length):
        """`length` random bytes (a bytes object, made on the device).

        Parameters
        ----------
        length : int
            How many bytes.

        Returns
        -------
        bytes
            Random bytes, on the host.
        """
        length = operator.index(length)
        if length < 0:
            raise ValueError(f"length must not be negative, got {length}")
        words = _GPUArray((length + 3) // 4, np.uint32)
        self._stream.fill_bits(words)
        return words.get().tobytes()[:length]


def default_rng(seed=None, backend=None) -> Generator:
    """A Generator seeded with `seed` (an int in [0, 2**64); None: from the operating system;
    a Generator: returned as is) over rng backend `backend` (None: the selected one).

    Parameters
    ----------
    seed : int | Generator | None
        The seed, in [0, 2**64); None: from the operating system; a Generator is returned as is.
    backend : str | None
        The rng backend; None: the selected one.

    Returns
    -------
    Generator
        The generator.
    """
    if isinstance(seed, Generator):
        return seed
    return Generator(seed, backend)


__dir__ = _public_dir(__all__)
