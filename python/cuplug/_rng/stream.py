"""What cuplug.random and cuplug.curandom share: a counter-based stream (seed, offset) over an
rng backend, and filling GPUArrays from it (dtypes, odd Box-Muller counts, 64-bit integers).

Generators live in the per-context cache (cuplug._driver.context_cache), so each is destroyed
with its context. Imports only downward: the extension, the cache and the array class."""

from __future__ import annotations

import os

import numpy as np

from cuplug import _core
from cuplug._array.core import GPUArray
from cuplug._driver import context_cache

_backends = _core.rng

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_RAW32 = (np.dtype(np.uint32), np.dtype(np.int32))
_RAW64 = (np.dtype(np.uint64), np.dtype(np.int64))


def random_seed() -> int:
    """A fresh 64-bit seed from the operating system."""
    return int.from_bytes(os.urandom(8), "little")


def check_seed(seed, what="seed") -> int:
    """`seed` as an int in [0, 2**64): TypeError / ValueError naming `what` otherwise."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{what} must be an int in [0, 2**64), not {type(seed).__name__}")
    seed = int(seed)
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"{what} must be in [0, 2**64), got {seed}")
    return seed


def _check_target(array, what):
    if not isinstance(array, GPUArray):
        raise TypeError(f"{what} must be a GPUArray, got {type(array).__name__}")
    if array.size and not array.flags.forc:
        raise ValueError(
            f"{what} must be contiguous (it is written as one block); fill a copy and assign it"
        )


class Stream:
    """Values of one rng backend from an explicit (seed, offset) state.

    ``backend=None`` follows the selected rng backend (``cuplug.use(rng=...)``) call by call;
    a name fixes it. Each call's values depend only on the seed and the offset it starts at: a
    float64 call makes philox and cuRAND's later values depend on how the stream was split
    into calls, so the next call starts the backend afresh from (seed, offset)."""

    def __init__(self, seed, offset=0, backend=None, options=None):
        self.seed = check_seed(seed)
        self.offset = check_seed(offset, "offset")
        self.backend = backend
        self.options = dict(options or {})
        # Bumped when the seed or offset is set: each context's generator is seeded again.
        self._epoch = 0
        self._host = {}  # the generator used with no current context (host-memory backends)

    @property
    def backend_name(self) -> str:
        return self.backend if self.backend is not None else _backends.selected_name()

    def _slot(self):
        """[backend name, generator, epoch it was seeded at] of the current context. Kept in the
        per-context cache, so a generator is destroyed with its context, while the context is
        still alive (a cuRAND generator outliving its context made every later cuRAND call of
        the process fail: issue 24), and never used in another context."""
        ctx, _ = context_cache.current()
        if ctx is None:
            return self._host
        mine = context_cache.per_object(ctx, "rng")
        slot = mine.get(self)
        if slot is None:
            slot = mine[self] = {}
        return slot

    def generator(self):
        """The backend's generator object of the current context, at (seed, offset)."""
        name = self.backend_name
        slot = self._slot()
        g = slot.get("generator")
        if g is None or slot.get("name") != name:
            g = slot["generator"] = _backends.create(name, self.options)
            slot["name"] = name
            slot["epoch"] = None
        if slot["epoch"] != self._epoch or g.offset != self.offset:
            g.seed(self.seed)
            if self.offset:
                g.offset = self.offset
            slot["epoch"] = self._epoch
        return g

    def restart(self, seed, offset=0):
        self.seed = check_seed(seed)
        self.offset = check_seed(offset, "offset")
        self._epoch += 1

    def supports(self, distribution, dtype) -> bool:
        return self.generator().supports(distribution, dtype)

    def generate(self, distribution, dtype, address, count, stream=None, **params):
        """`count` values into memory at `address`."""
        if count == 0:
            return
        g = self.generator()
        g.generate(distribution, dtype, int(address), count, stream=stream, **params)
        self.offset = g.offset
        if dtype == "float64":
            self._epoch += 1

    # ---- GPUArrays -------------------------------------------------------------------------

    def fill_float(self, distribution, array, stream=None, what="data", **params):
        """uniform / normal / lognormal float32 or float64 values into a GPUArray. Odd sizes of
        normal / lognormal take one more value than they keep."""
        _check_target(array, what)
        _core._array._check_same_device(f"fill_{distribution}", array)
        if array.dtype not in FLOAT_DTYPES:
            raise NotImplementedError(
                f"{distribution} values are float32 or float64; {what} is {array.dtype}"
            )
        dtype = array.dtype.name
        n = array.size
        address = int(array.gpudata)
        if distribution == "uniform" or n % 2 == 0:
            self.generate(distribution, dtype, address, n, stream, **params)
            return array
        # Box-Muller makes pairs: the last value comes from a pair of its own.
        if n > 1:
            self.generate(distribution, dtype, address, n - 1, stream, **params)
        _fill_last_from_pair(self, distribution, array, stream, params)
        return array

    def fill_bits(self, array, stream=None, what="data"):
        """Raw random bits into a GPUArray of 4- or 8-byte integers (8-byte ones take two
        32-bit words each unless the backend makes 64-bit words, as Sobol64 does)."""
        _check_target(array, what)
        _core._array._check_same_device("fill_bits", array)
        n = array.size
        address = int(array.gpudata)
        if array.dtype in _RAW32:
            self.generate("raw_bits", "uint32", address, n, stream)
        elif array.dtype in _RAW64:
            if self.supports("raw_bits", "uint64"):
                self.generate("raw_bits", "uint64", address, n, stream)
            else:
                self.generate("raw_bits", "uint32", address, 2 * n, stream)
        else:
            raise NotImplementedError(
                f"raw bits fill int32, uint32, int64 or uint64 arrays; {what} is {array.dtype}"
            )
        return array

    def fill_poisson(self, array, lam, stream=None, what="data"):
        """Poisson values with mean `lam` into a uint32 GPUArray."""
        _check_target(array, what)
        if array.dtype != np.uint32:
            raise NotImplementedError(f"poisson values are uint32; {what} is {array.dtype}")
        self.generate("poisson", "uint32", int(array.gpudata), array.size, stream, lam=float(lam))
        return array


def _fill_last_from_pair(stream_, distribution, array, stream, params):
    pair = GPUArray(2, array.dtype)
    stream_.generate(distribution, array.dtype.name, int(pair.gpudata), 2, stream, **params)
    item = array.dtype.itemsize
    last = int(array.gpudata) + (array.size - 1) * item
    if stream is None:
        _core.memcpy_dtod(last, pair.gpudata, item)
    else:
        _core.memcpy_dtod_async(last, pair.gpudata, item, stream)
        # The pair's memory is returned stream-ordered only on the default stream: keep it
        # until the copy has run.
        stream.synchronize()
