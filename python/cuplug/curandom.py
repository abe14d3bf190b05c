"""PyCUDA's ``pycuda.curandom`` for cuplug.

``rand()`` draws from the selected rng backend (``cuplug.use(rng="philox" | "curand")``; PyCUDA's
was an MD5 toy that compiled a kernel per call). The generator classes are PyCUDA's: cuRAND's
device API in kernels compiled through the compiler backend (cached), one state per thread, the
same values as PyCUDA for the same seeds. ``PhiloxRandomNumberGenerator`` (not in PyCUDA) is a
counter-based generator over the rng backends, with the same fill_* / gen_* methods and no state
array. Where PyCUDA is broken cuplug differs: ``call_skip_ahead`` moves every generator, not only
the first block's (docs/rng.md).
"""

from __future__ import annotations

import random as _random

import numpy as np

from cuplug import _core, _rng

# Defined below cuplug.driver, which exports them too (as PyCUDA's _driver does).
from cuplug._curand_info import curand_backend as _curand_backend
from cuplug._curand_info import direction_vector_set, get_curand_version
from cuplug._public import public_dir as _public_dir

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


def rand(shape, dtype=np.float32, stream=None):
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
    from cuplug import gpuarray

    dtype = np.dtype(dtype)
    if dtype not in _rng.FLOAT_DTYPES and dtype not in (np.int32, np.uint32):
        raise NotImplementedError(f"rand makes float32, float64, int32 or uint32, not {dtype}")
    if _rand_stream is None:
        _rand_stream = _rng.Stream(_rng.random_seed())
    result = gpuarray.empty(shape, dtype)
    if dtype in _rng.FLOAT_DTYPES:
        return _rand_stream.fill_float("uniform", result, stream)
    return _rand_stream.fill_bits(result, stream)


# ---- cuRAND's tables -----------------------------------------------------------------------


_SOBOL_DIMENSIONS = 20000  # of every cuRAND table
_DIRECTION_TABLES = {
    direction_vector_set.VECTOR_32: ("sobol32_directions", np.uint32, 32),
    direction_vector_set.SCRAMBLED_VECTOR_32: ("scrambled_sobol32_directions", np.uint32, 32),
    direction_vector_set.VECTOR_64: ("sobol64_directions", np.uint64, 64),
    direction_vector_set.SCRAMBLED_VECTOR_64: ("scrambled_sobol64_directions", np.uint64, 64),
}


def _host_table(table, count, dtype, width):
    """`count` rows of a cuRAND table in host memory; PyCUDA repeats cuRAND's 20000 dimensions
    for more generators than that."""
    count = int(count)
    if count < 0:
        raise ValueError(f"count must not be negative, got {count}")
    result = np.empty((count, width) if width > 1 else (count,), dtype)
    backend = _curand_backend()
    for start in range(0, count, _SOBOL_DIMENSIONS):
        rows = min(_SOBOL_DIMENSIONS, count - start)
        backend.copy_table(table, 0, rows * width, result[start : start + rows])
    return result


def _table(table, count, dtype, width):
    from cuplug import gpuarray

    return gpuarray.to_gpu(_host_table(table, count, dtype, width))


def _default_table(table, count, dtype, width):
    """The first min(count, 20000) rows of a cuRAND table (a GPUArray), read (never written) by
    the Sobol generators' prepare kernels: one per live context, gone with it (context_cache)."""
    from cuplug._driver import context_cache

    rows = min(int(count), _SOBOL_DIMENSIONS)
    return context_cache.lookup(
        _core.Context.get_current(),
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
    from cuplug import gpuarray

    return gpuarray.empty([n], np.int32).fill(_random.randint(0, 2**31 - 1))


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
    from cuplug import gpuarray

    return gpuarray.to_gpu(np.random.randint(0, 2**31 - 1, n).astype(np.int32))


# ---- device-API generators -----------------------------------------------------------------

# name, output type, expression over the state pointer `s` (and mean / stddev / lambda),
# extra parameters.
_DRAWS = [
    ("uniform_int", "unsigned int", "curand(s)", ""),
    ("uniform_float", "float", "curand_uniform(s)", ""),
    ("uniform_double", "double", "curand_uniform_double(s)", ""),
    ("normal_float", "float", "curand_normal(s)", ""),
    ("normal_double", "double", "curand_normal_double(s)", ""),
    ("normal_log_float", "float", "curand_log_normal(s, mean, stddev)", "float mean, float stddev"),
    (
        "normal_log_double",
        "double",
        "curand_log_normal_double(s, mean, stddev)",
        "double mean, double stddev",
    ),
    ("poisson_int", "unsigned int", "curand_poisson(s, lambda)", "double lambda"),
]
_DRAWS_64 = [("uniform_long", "unsigned long long", "curand(s)", "")]
_DRAWS_PAIRS = [
    ("normal_float2", "float2", "curand_normal2(s)", ""),
    ("normal_double2", "double2", "curand_normal2_double(s)", ""),
    (
        "normal_log_float2",
        "float2",
        "curand_log_normal2(s, mean, stddev)",
        "float mean, float stddev",
    ),
    (
        "normal_log_double2",
        "double2",
        "curand_log_normal2_double(s, mean, stddev)",
        "double mean, double stddev",
    ),
]
_POISSON_IN_PLACE = [
    ("poisson_inplace_float", "float"),
    ("poisson_inplace_double", "double"),
    ("poisson_inplace_int", "unsigned int"),
]
# Argument formats (Function.prepare) of the kernels by extra parameters.
_FORMATS = {"": "PPn", "float mean, float stddev": "PPffn", "double mean, double stddev": "PPddn"}


def _draw_source(name, state, out_type, expression, params):
    extra = f", {params}" if params else ""
    return f"""
__global__ void {name}({state} *states, {out_type} *out{extra}, const size_t n)
{{
  const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  {state} *s = &states[t];
  for (size_t i = t; i < n; i += (size_t)blockDim.x * gridDim.x)
    out[i] = {expression};
}}"""


def _poisson_in_place_source(name, state, value_type):
    return f"""
__global__ void {name}({state} *states, {value_type} *values, const size_t n)
{{
  const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  {state} *s = &states[t];
  for (size_t i = t; i < n; i += (size_t)blockDim.x * gridDim.x)
    values[i] = ({value_type})curand_poisson(s, (double)values[i]);
}}"""


def _skip_source(name, state, skip_type, function):
    return f"""
__global__ void {name}({state} *states, const size_t n, const {skip_type} skip)
{{
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n)
    {function}(skip, &states[i]);
}}
__global__ void {name}_array({state} *states, const size_t n, const {skip_type} *skip)
{{
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n)
    {function}(skip[i], &states[i]);
}}"""


class _DeviceGenerator:
    """A cuRAND device-API generator: one state per thread of (block_count, 1) blocks of
    generators_per_block threads, the kernels of one compiled module."""

    has_box_muller = False
    generator_bits = 32
    state_type = ""
    _skips = ()  # (kernel name, cuRAND function) beyond skip_ahead
    _init = ""  # the prepare kernel's source

    @classmethod
    def _draws(cls):
        draws = list(_DRAWS)
        if cls.generator_bits == 64:
            draws += _DRAWS_64
        if cls.has_box_muller:
            draws += _DRAWS_PAIRS
        return draws

    @classmethod
    def _skip_type(cls):
        sobol32 = "Sobol" in cls.state_type and cls.generator_bits == 32
        return "unsigned int" if sobol32 else "unsigned long long"

    @classmethod
    def _init_source(cls):
        return cls._init.replace("%(state)s", cls.state_type)

    @classmethod
    def source(cls):
        """The CUDA source of this class's module (cuRAND's device API; CI compiles it)."""
        state = cls.state_type
        pieces = [_draw_source(name, state, *rest) for name, *rest in cls._draws()]
        pieces += [_poisson_in_place_source(n, state, t) for n, t in _POISSON_IN_PLACE]
        pieces.append(_skip_source("skip_ahead", state, cls._skip_type(), "skipahead"))
        for name, function in cls._skips:
            pieces.append(_skip_source(name, state, "unsigned long long", function))
        pieces.append(cls._init_source())
        pieces.append(f"__global__ void state_size(size_t *out) {{ *out = sizeof({state}); }}")
        return '#include <curand_kernel.h>\nextern "C" {\n' + "\n".join(pieces) + "\n}\n"

    def __init__(self):
        import cuplug.driver as drv
        from cuplug.compiler import SourceModule

        if get_curand_version() is None:
            raise OSError(
                "cuRAND is not available (the curand rng backend did not load: "
                "python -m cuplug info says why)"
            )
        self.block_count = drv.Context.get_device().get_attribute(
            drv.device_attribute.MULTIPROCESSOR_COUNT
        )
        draws = self._draws()
        skip_type = self._skip_type()
        self.module = SourceModule(self.source(), no_extern_c=True)

        self.generators = {}
        for name, _, _, params in draws:
            self.generators[name] = self.module.get_function(name).prepare(
                _FORMATS.get(params, "PPdn")
            )
        for name, _ in _POISSON_IN_PLACE:
            self.generators[name] = self.module.get_function(name).prepare("PPn")
        self._skip_kernels = {}
        skip_format = "PnI" if skip_type == "unsigned int" else "PnQ"
        for name in ["skip_ahead"] + [n for n, _ in self._skips]:
            self._skip_kernels[name] = self.module.get_function(name).prepare(skip_format)
            self._skip_kernels[name + "_array"] = self.module.get_function(name + "_array").prepare(
                "PnP"
            )
        self._prepare = self.module.get_function("prepare")
        kernels = [*self.generators.values(), *self._skip_kernels.values(), self._prepare]
        self.generators_per_block = min(k.max_threads_per_block for k in kernels)
        self._state = None

    @property
    def generator_count(self):
        return self.block_count * self.generators_per_block

    @property
    def state(self):
        """The generators' states (device memory, allocated on first use)."""
        if self._state is None:
            import cuplug.driver as drv

            size = drv.mem_alloc(8)
            self.module.get_function("state_size")(size, block=(1, 1, 1), grid=(1, 1))
            nbytes = np.empty(1, np.uint64)
            drv.memcpy_dtoh(nbytes, size)
            self._state = drv.mem_alloc(self.generator_count * int(nbytes[0]))
        return self._state

    def _initialise(self, *args):
        """Runs the prepare kernel. PyCUDA raises the context's stack limit to 16 KiB around
        it; cuRAND's curand_init needs at most 72 bytes of stack today (ptxas -v, sm_90), which
        the driver provides by itself, while a 16 KiB limit makes it reserve local memory for
        every thread the GPU can hold (270,336 on an H100) and cost 3.5 ms a generator there."""
        import cuplug.driver as drv

        try:
            self._prepare(
                self.state,
                np.uintp(self.generator_count),
                *args,
                block=(self.generators_per_block, 1, 1),
                grid=(self.block_count, 1),
            )
            drv.Context.synchronize()
        except drv.LaunchError:
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
        if data.dtype not in _rng.FLOAT_DTYPES:
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
        if data.dtype not in _rng.FLOAT_DTYPES:
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
        from cuplug import gpuarray

        result = gpuarray.empty(shape, dtype)
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
    _skips = (("skip_ahead_sequence", "skipahead_sequence"),)
    _init = """
__global__ void prepare(%(state)s *states, const size_t n, const unsigned int *seeds,
                        const size_t offset)
{
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n)
    curand_init(seeds[i], i, offset, &states[i]);
}"""

    def __init__(self, seed_getter=None, offset=0):
        from cuplug import gpuarray

        super().__init__()
        self._prepare.prepare("PnPn")
        count = self.generator_count
        if seed_getter is None:
            seeds = gpuarray.to_gpu(np.random.randint(0, (1 << 31) - 1, count).astype(np.int32))
        else:
            seeds = seed_getter(count)
        if not (
            isinstance(seeds, gpuarray.GPUArray) and seeds.dtype == np.int32 and seeds.size == count
        ):
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


class _SobolGenerator(_DeviceGenerator):
    _direction_set = direction_vector_set.VECTOR_32
    _scramble = None  # the scramble-constant function of the scrambled kinds
    _init = """
__global__ void prepare(%(state)s *states, const size_t n, %(vectors)s *vectors,
                        const size_t rows, const size_t offset)
{
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n)
    curand_init(vectors[i %% rows], offset, &states[i]);
}"""
    _scrambled_init = """
__global__ void prepare(%(state)s *states, const size_t n, %(vectors)s *vectors,
                        %(scramble)s *scramble, const size_t rows, const size_t offset)
{
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n)
    curand_init(vectors[i %% rows], scramble[i %% rows], offset, &states[i]);
}"""

    @classmethod
    def _init_source(cls):
        wide = cls.generator_bits == 64
        names = {
            "state": cls.state_type,
            "vectors": "curandDirectionVectors64_t" if wide else "curandDirectionVectors32_t",
            "scramble": "unsigned long long" if wide else "unsigned int",
        }
        return (cls._scrambled_init if cls._scramble else cls._init) % names

    def __init__(self, dir_vector=None, scramble_vector=None, offset=0):
        from cuplug import gpuarray

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
            isinstance(dir_vector, gpuarray.GPUArray)
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
                    isinstance(scramble_vector, gpuarray.GPUArray)
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


# ---- Philox over the rng backends ----------------------------------------------------------


def _philox_stream(seed, offset, backend):
    if backend is None:
        from cuplug import plugins

        backend = "philox" if plugins.unavailable_reason("rng", "philox") is None else "curand"
    options = {"generator": "philox"} if backend == "curand" else {}
    return _rng.Stream(seed, offset, backend, options)


class PhiloxRandomNumberGenerator:
    """Philox4x32-10, counter-based: a seed and an offset instead of a state per thread, values
    bit-identical to cuRAND's PHILOX4_32_10 generator. ``backend`` is "philox" (cuplug's
    kernels, the default when installed) or "curand" (cuRAND's Philox); both give the same
    values. Not in PyCUDA."""

    has_box_muller = True
    generator_bits = 32

    def __init__(self, seed=None, offset=0, backend=None):
        self._stream = _philox_stream(_rng.random_seed() if seed is None else seed, offset, backend)

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
        if data.dtype in _rng.FLOAT_DTYPES:
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
        if data.dtype not in _rng.FLOAT_DTYPES:
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
        if data.dtype not in _rng.FLOAT_DTYPES:
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


__dir__ = _public_dir(__all__)
