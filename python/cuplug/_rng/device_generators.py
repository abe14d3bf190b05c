"""PyCUDA's cuRAND device-API generators (cuplug.curandom): one cuRAND state per thread of
(multiprocessor count) blocks, initialised by a prepare kernel and drawn from by a kernel per
distribution of one module compiled per generator (device_kernels.py has the source). This file
has their base class (compile, allocate the states, prepare, fill, skip) and the pseudo-random
ones, XORWOW and MRG32k3a; the Sobol ones, which need cuRAND's tables, are in sobol.py.

A generator is PyCUDA's object of the context it was made in: its states are its own memory,
released with it; its module is its own SourceModule (compiled once, from the compile cache
after that; loaded for each generator, as PyCUDA's are), unloaded with the generator or its
context. The values are PyCUDA's for the
same seeds; ``call_skip_ahead`` moves every generator, where PyCUDA's moved only the first
block's (docs/rng.md)."""

from __future__ import annotations

import random

import numpy as np

from cuplug import _core
from cuplug._array.core import GPUArray

from . import device_kernels as kernels
from .curand_info import get_curand_version
from .stream import FLOAT_DTYPES

__all__ = [
    "MRG32k3aRandomNumberGenerator",
    "XORWOWRandomNumberGenerator",
    "seed_getter_uniform",
    "seed_getter_unique",
    "to_device",
]


def to_device(host):
    """A GPUArray copy of a contiguous host array (the tables and seeds these generators read)."""
    result = GPUArray(host.shape, host.dtype)
    result.set(host)
    return result


def seed_getter_uniform(n):
    """An int32 GPUArray of `n` copies of one random seed.

    Parameters
    ----------
    n : int
        How many seeds.

    Returns
    -------
    GPUArray
        The seeds.
    """
    return GPUArray([n], np.int32).fill(random.randint(0, 2**31 - 1))


def seed_getter_unique(n):
    """An int32 GPUArray of `n` random seeds.

    Parameters
    ----------
    n : int
        How many seeds.

    Returns
    -------
    GPUArray
        The seeds.
    """
    return to_device(np.random.randint(0, 2**31 - 1, n).astype(np.int32))


class _DeviceGenerator:
    """A cuRAND device-API generator: one state per thread of (block_count, 1) blocks of
    generators_per_block threads, the kernels of one compiled module."""

    has_box_muller = False
    generator_bits = 32
    state_type = ""
    _skips = ()  # (kernel name, cuRAND function) beyond skip_ahead

    @classmethod
    def _draws(cls):
        return kernels.draws(cls.generator_bits, cls.has_box_muller)

    @classmethod
    def _skip_type(cls):
        return kernels.skip_type(cls.state_type, cls.generator_bits)

    @classmethod
    def _init_source(cls):
        """The prepare kernel's source (each family has its own arguments)."""
        raise NotImplementedError

    @classmethod
    def source(cls):
        """The CUDA source of this class's module (cuRAND's device API; CI compiles it)."""
        return kernels.module_source(
            cls.state_type, cls._draws(), cls._skip_type(), cls._skips, cls._init_source()
        )

    def __init__(self):
        # Late: compiling is needed by these classes alone, not by importing cuplug.curandom.
        from cuplug._compile.source_module import SourceModule

        if get_curand_version() is None:
            raise OSError(
                "cuRAND is not available (the curand rng backend did not load: "
                "python -m cuplug info says why)"
            )
        self.block_count = _core.Context.get_device().get_attribute(
            _core.device_attribute.MULTIPROCESSOR_COUNT
        )
        draws = self._draws()
        skip_type = self._skip_type()
        self.module = SourceModule(self.source(), no_extern_c=True)

        self.generators = {}
        for name, _, _, params in draws:
            self.generators[name] = self.module.get_function(name).prepare(
                kernels.FORMATS.get(params, kernels.OTHER_FORMAT)
            )
        for name, _ in kernels.POISSON_IN_PLACE:
            self.generators[name] = self.module.get_function(name).prepare("PPn")
        self._skip_kernels = {}
        skip_format = "PnI" if skip_type == "unsigned int" else "PnQ"
        for name in ["skip_ahead"] + [n for n, _ in self._skips]:
            self._skip_kernels[name] = self.module.get_function(name).prepare(skip_format)
            self._skip_kernels[name + "_array"] = self.module.get_function(name + "_array").prepare(
                "PnP"
            )
        self._prepare = self.module.get_function("prepare")
        functions = [*self.generators.values(), *self._skip_kernels.values(), self._prepare]
        self.generators_per_block = min(f.max_threads_per_block for f in functions)
        self._state = None

    @property
    def generator_count(self):
        return self.block_count * self.generators_per_block

    @property
    def state(self):
        """The generators' states (device memory, allocated on first use)."""
        if self._state is None:
            size = _core.mem_alloc(8)
            self.module.get_function("state_size")(size, block=(1, 1, 1), grid=(1, 1))
            nbytes = np.empty(1, np.uint64)
            _core.memcpy_dtoh(nbytes, size)
            self._state = _core.mem_alloc(self.generator_count * int(nbytes[0]))
        return self._state

    def _initialise(self, *args):
        """Runs the prepare kernel. PyCUDA raises the context's stack limit to 16 KiB around
        it; cuRAND's curand_init needs at most 72 bytes of stack today (ptxas -v, sm_90), which
        the driver provides by itself, while a 16 KiB limit makes it reserve local memory for
        every thread the GPU can hold (270,336 on an H100) and cost 3.5 ms a generator there."""
        try:
            self._prepare(
                self.state,
                np.uintp(self.generator_count),
                *args,
                block=(self.generators_per_block, 1, 1),
                grid=(self.block_count, 1),
            )
            _core.Context.synchronize()
        except _core.LaunchError:
            raise ValueError("Initialisation failed. Decrease number of threads.") from None

    def _launch(self, kernel, stream, *args):
        kernel.prepared_async_call(
            (self.block_count, 1), (self.generators_per_block, 1, 1), stream, self.state, *args
        )

    # ---- fills ------------------------------------------------------------------------------

    def fill_uniform(self, data, stream=None):
        """Fills ``data`` with uniform values: floats in (0, 1], or random bits for integers.

        Parameters
        ----------
        data : GPUArray
            float32, float64, (u)int32 or (u)int64 elements, all overwritten.
        stream : Stream, optional
            The stream the fill is ordered on.
        """
        if data.dtype == np.float32:
            name = "uniform_float"
        elif data.dtype == np.float64:
            name = "uniform_double"
        elif data.dtype in (np.int32, np.uint32):
            name = "uniform_int"
        elif data.dtype in (np.int64, np.uint64) and self.generator_bits >= 64:
            name = "uniform_long"
        else:
            raise NotImplementedError
        self._launch(self.generators[name], stream, data.gpudata, data.size)

    def _pairs(self, base, data):
        """The kernel name and count for normal-type values: pairs when the size is even."""
        if self.has_box_muller and data.size % 2 == 0:
            return base + "2", data.size // 2
        return base, data.size

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
        name, n = self._pairs("normal_" + ("float" if data.dtype == np.float32 else "double"), data)
        self._launch(self.generators[name], stream, data.gpudata, n)

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
        f32 = data.dtype == np.float32
        name, n = self._pairs("normal_log_" + ("float" if f32 else "double"), data)
        cast = np.float32 if f32 else np.float64
        self._launch(self.generators[name], stream, data.gpudata, cast(mean), cast(stddev), n)

    def fill_poisson(self, data, lambda_value=None, stream=None):
        """Fills ``data`` with Poisson counts.

        Parameters
        ----------
        data : GPUArray
            uint32 counts; with ``lambda_value`` None, float32, float64 or uint32 elements each
            holding the mean of its own count, which replaces it.
        lambda_value : float, optional
            The mean of every count.
        stream : Stream, optional
            The stream the fill is ordered on.
        """
        if lambda_value is None:
            kinds = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
            kinds[np.dtype(np.uint32)] = "int"
            if data.dtype not in kinds:
                raise NotImplementedError
            self._launch(
                self.generators["poisson_inplace_" + kinds[data.dtype]],
                stream,
                data.gpudata,
                data.size,
            )
            return
        if data.dtype != np.uint32:
            raise NotImplementedError
        self._launch(self.generators["poisson_int"], stream, data.gpudata, lambda_value, data.size)

    def _gen(self, shape, dtype, fill, *args, stream=None):
        result = GPUArray(shape, dtype)
        fill(result, *args, stream=stream)
        return result

    def gen_uniform(self, shape, dtype, stream=None):
        """A new GPUArray of uniform values (see fill_uniform).

        Parameters
        ----------
        shape : int | tuple[int, ...]
            Its shape, in elements.
        dtype : numpy.typing.DTypeLike
            Its element type.
        stream : Stream, optional
            The stream the fill is ordered on.
        """
        return self._gen(shape, dtype, self.fill_uniform, stream=stream)

    def gen_normal(self, shape, dtype, stream=None):
        """A new GPUArray of standard normal values (see fill_normal).

        Parameters
        ----------
        shape : int | tuple[int, ...]
            Its shape, in elements.
        dtype : numpy.typing.DTypeLike
            float32 or float64.
        stream : Stream, optional
            The stream the fill is ordered on.
        """
        return self._gen(shape, dtype, self.fill_normal, stream=stream)

    def gen_log_normal(self, shape, dtype, mean, stddev, stream=None):
        """A new GPUArray of log-normal values (see fill_log_normal).

        Parameters
        ----------
        shape : int | tuple[int, ...]
            Its shape, in elements.
        dtype : numpy.typing.DTypeLike
            float32 or float64.
        mean, stddev : float
            The underlying normal distribution's mean and standard deviation.
        stream : Stream, optional
            The stream the fill is ordered on.
        """
        return self._gen(shape, dtype, self.fill_log_normal, mean, stddev, stream=stream)

    def gen_poisson(self, shape, dtype, lambda_value, stream=None):
        """A new GPUArray of Poisson counts of mean ``lambda_value`` (see fill_poisson).

        Parameters
        ----------
        shape : int | tuple[int, ...]
            Its shape, in elements.
        dtype : numpy.typing.DTypeLike
            uint32.
        lambda_value : float
            The mean.
        stream : Stream, optional
            The stream the fill is ordered on.
        """
        return self._gen(shape, dtype, self.fill_poisson, lambda_value, stream=stream)

    # ---- skipping ---------------------------------------------------------------------------

    def _skip(self, name, i, stream):
        # Every generator moves (PyCUDA's moved only the first block's: docs/rng.md).
        self._launch(self._skip_kernels[name], stream, self.generator_count, i)

    def _skip_array(self, name, i, stream):
        self._launch(self._skip_kernels[name + "_array"], stream, self.generator_count, i.gpudata)

    def call_skip_ahead(self, i, stream=None):
        """Moves every generator `i` values on.

        Parameters
        ----------
        i : int
            Values to skip.
        stream : Stream | None
            The stream the skip is ordered on.
        """
        self._skip("skip_ahead", i, stream)

    def call_skip_ahead_array(self, i, stream=None):
        """Moves generator k on by i[k] (a GPUArray of one count per generator)."""
        self._skip_array("skip_ahead", i, stream)


class _PseudoGenerator(_DeviceGenerator):
    """XORWOW and MRG32k3a: seeded, one int32 seed per generator."""

    _skips = (("skip_ahead_sequence", "skipahead_sequence"),)

    @classmethod
    def _init_source(cls):
        return kernels.pseudo_prepare_source(cls.state_type)

    def __init__(self, seed_getter=None, offset=0):
        super().__init__()
        self._prepare.prepare("PnPn")
        count = self.generator_count
        if seed_getter is None:
            seeds = to_device(np.random.randint(0, (1 << 31) - 1, count).astype(np.int32))
        else:
            seeds = seed_getter(count)
        if not (isinstance(seeds, GPUArray) and seeds.dtype == np.int32 and seeds.size == count):
            raise TypeError("seed must be GPUArray of integers of right length")
        self._initialise(seeds.gpudata, np.uintp(offset))

    def call_skip_ahead_sequence(self, i, stream=None):
        """Moves every generator `i` subsequences (2^67 values for XORWOW) on."""
        self._skip("skip_ahead_sequence", i, stream)

    def call_skip_ahead_sequence_array(self, i, stream=None):
        self._skip_array("skip_ahead_sequence", i, stream)


class XORWOWRandomNumberGenerator(_PseudoGenerator):
    """cuRAND's XORWOW, one state per generator; seed_getter(count) gives the int32 seeds."""

    has_box_muller = True
    state_type = "curandStateXORWOW"


class MRG32k3aRandomNumberGenerator(_PseudoGenerator):
    """cuRAND's MRG32k3a, one state per generator; seed_getter(count) gives the int32 seeds."""

    has_box_muller = True
    state_type = "curandStateMRG32k3a"
    _skips = (
        ("skip_ahead_sequence", "skipahead_sequence"),
        ("skip_ahead_subsequence", "skipahead_subsequence"),
    )

    def call_skip_ahead_subsequence(self, i, stream=None):
        """Moves every generator ``i`` subsequences (2**67 values each) on.

        Parameters
        ----------
        i : int
            Subsequences to skip.
        stream : Stream, optional
            The stream the skip is ordered on.
        """
        self._skip("skip_ahead_subsequence", i, stream)

    def call_skip_ahead_subsequence_array(self, i, stream=None):
        """Moves each generator its own number of subsequences on.

        Parameters
        ----------
        i : GPUArray
            One count per generator (uint64).
        stream : Stream, optional
            The stream the skip is ordered on.
        """
        self._skip_array("skip_ahead_subsequence", i, stream)
