"""PyCUDA's ``pycuda.tools`` for cuplug: default context, device data, occupancy, C types of
dtypes, context-dependent memoization and test helpers. Re-exported here under PyCUDA's names:
the C-argument parser (parse_c_arg and its Argument classes) from cuplug._kernels.cargs, the
memory pools from cuplug._driver.pools, make_default_context from cuplug._driver.default_context
and the memoization (context_dependent_memoize, clear_context_caches) from
cuplug._driver.memoize."""

import functools
import warnings

import cuplug.driver as cuda
from cuplug._driver.default_context import configured_device_number as _configured_device_number
from cuplug._driver.default_context import make_default_context
from cuplug._driver.memoize import (
    clear_context_caches,
    context_dependent_memoize,
    context_dependent_memoized_functions,
)
from cuplug._driver.pools import (  # noqa: F401  (PyCUDA's pycuda.tools re-exports these)
    DebugMemoryPool,
    DeviceMemoryPool,
    PageLockedAllocator,
    PageLockedMemoryPool,
    bitlog2,
)
from cuplug._kernels.cargs import (  # noqa: F401  (PyCUDA's pycuda.tools has these)
    Argument,
    ScalarArg,
    VectorArg,
    get_arg_type,
    parse_c_arg,
)
from cuplug._public import public_dir as _public_dir

# {{{ default device / context


def get_default_device(default=0):
    """Deprecated: the Device named by $CUDA_DEVICE or ~/.cuda_device, else Device(default).

    Parameters
    ----------
    default : int
        The device number when neither ``$CUDA_DEVICE`` nor ``~/.cuda_device`` gives one.

    Returns
    -------
    Device
        The device.
    """
    warnings.warn(
        "get_default_device() is deprecated; use make_default_context() instead",
        DeprecationWarning,
        stacklevel=2,
    )
    devn = _configured_device_number()
    return cuda.Device(default if devn is None else devn)


# }}}

# {{{ rounding helpers


def _exact_div(dividend, divisor):
    quot, rem = divmod(dividend, divisor)
    if rem:
        raise ValueError(f"{dividend} is not a multiple of {divisor}")
    return quot


def _int_ceiling(value, multiple_of=1):
    """value rounded up to a multiple of multiple_of (the occupancy calculator's CEILING)."""
    return -(-value // multiple_of) * multiple_of


def _int_floor(value, multiple_of=1):
    """value rounded down to a multiple of multiple_of (the occupancy calculator's FLOOR)."""
    return (value // multiple_of) * multiple_of


# }}}

# {{{ device data / occupancy


class DeviceData:
    """Per-device limits for launch-size and occupancy calculations.

    Unlike PyCUDA (whose constants stop at Kepler), warps_per_mp and thread_blocks_per_mp are
    the device's own MAX_THREADS_PER_MULTIPROCESSOR / warp size and
    MAX_BLOCKS_PER_MULTIPROCESSOR."""

    def __init__(self, dev=None):
        if dev is None:
            dev = cuda.Context.get_device()
        attr = cuda.device_attribute

        self.max_threads = dev.get_attribute(attr.MAX_THREADS_PER_BLOCK)
        self.warp_size = dev.get_attribute(attr.WARP_SIZE)
        self.warps_per_mp = dev.get_attribute(attr.MAX_THREADS_PER_MULTIPROCESSOR) // self.warp_size
        self.thread_blocks_per_mp = dev.get_attribute(attr.MAX_BLOCKS_PER_MULTIPROCESSOR)
        self.registers = dev.get_attribute(attr.MAX_REGISTERS_PER_BLOCK)
        self.shared_memory = dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK)

        if dev.compute_capability() >= (2, 0):
            self.smem_alloc_granularity = 128
            self.smem_granularity = 32
            self.register_allocation_unit = "warp"
        else:
            self.smem_alloc_granularity = 512
            self.smem_granularity = 16
            self.register_allocation_unit = "block"

    def align(self, bytes, word_size=4):
        """``bytes`` rounded up to the coalescing boundary of ``word_size``-byte fetches.

        Parameters
        ----------
        bytes : int
            A size, in bytes.
        word_size : int
            Bytes per fetch: 4, 8 or 16.
        """
        return _int_ceiling(bytes, self.align_bytes(word_size))

    def align_dtype(self, elements, dtype_size):
        """``elements`` rounded up to the coalescing boundary, in elements.

        Parameters
        ----------
        elements : int
            A count of elements.
        dtype_size : int
            Bytes per element: 4, 8 or 16.
        """
        return _int_ceiling(elements, self.align_words(dtype_size))

    def align_words(self, word_size):
        """The coalescing boundary, in ``word_size``-byte words.

        Parameters
        ----------
        word_size : int
            Bytes per word: 4, 8 or 16.
        """
        return _exact_div(self.align_bytes(word_size), word_size)

    def align_bytes(self, word_size=4):
        """The coalescing boundary, in bytes, for ``word_size``-byte fetches (64 or 128).

        Parameters
        ----------
        word_size : int
            Bytes per fetch: 4, 8 or 16.
        """
        if word_size == 4:
            return 64
        if word_size in (8, 16):
            return 128
        raise ValueError(f"no alignment possible for fetches of size {word_size}")

    def coalesce(self, thread_count):
        """``thread_count`` rounded up to a multiple of 16 (a half warp).

        Parameters
        ----------
        thread_count : int
            Threads.
        """
        return _int_ceiling(thread_count, 16)

    @staticmethod
    def make_valid_tex_channel_count(size):
        """The smallest texture channel count (1, 2 or 4) holding ``size`` channels.

        Parameters
        ----------
        size : int
            Channels wanted.
        """
        for valid_size in (1, 2, 4):
            if size <= valid_size:
                return valid_size
        raise ValueError("could not enlarge argument to valid channel count")


class OccupancyRecord:
    """Blocks per multiprocessor and occupancy of a launch of `threads` threads per block using
    `shared_mem` bytes and `registers` registers per thread, and what limits it
    (limited_by: "device", "warps", "regs" or "smem")."""

    def __init__(self, devdata, threads, shared_mem=0, registers=0):
        if threads > devdata.max_threads:
            raise ValueError("too many threads")

        alloc_warps = _int_ceiling(threads, devdata.warp_size) // devdata.warp_size
        alloc_smem = _int_ceiling(shared_mem, devdata.smem_alloc_granularity)
        if devdata.register_allocation_unit == "warp":
            alloc_regs = alloc_warps * 32 * registers
        elif devdata.register_allocation_unit == "block":
            alloc_regs = _int_ceiling(alloc_warps * 2, 4) * 16 * registers
        else:
            raise ValueError(
                "Improper register allocation unit:" + devdata.register_allocation_unit
            )

        if alloc_regs > devdata.registers:
            raise ValueError("too many registers")
        if alloc_smem > devdata.shared_memory:
            raise ValueError("too much smem")

        self.tb_per_mp_limits = [
            (devdata.thread_blocks_per_mp, "device"),
            (devdata.warps_per_mp // alloc_warps, "warps"),
        ]
        if registers > 0:
            self.tb_per_mp_limits.append((devdata.registers // alloc_regs, "regs"))
        if shared_mem > 0:
            self.tb_per_mp_limits.append((devdata.shared_memory // alloc_smem, "smem"))

        self.tb_per_mp, self.limited_by = min(self.tb_per_mp_limits)
        self.warps_per_mp = self.tb_per_mp * alloc_warps
        self.occupancy = self.warps_per_mp / devdata.warps_per_mp


# }}}

# {{{ C types <-> dtypes


# The registry lives in cuplug._dtypes (shared with the array layer); PyCUDA code imports it
# from here.
from cuplug._dtypes import (  # noqa: E402, F401  (re-exported)
    TypeNameNotKnown,
    _DTypeRegistry,
    _registry,
    dtype_to_ctype,
    get_or_register_dtype,
    register_dtype,
)

# }}}

# {{{ context-dependent memoization

# In cuplug._driver.memoize (private code memoizes per context too), re-exported above.

# }}}

# {{{ pytest interaction


def _check_context(ctx):
    dev = ctx.get_device()
    assert isinstance(dev.name(), str)
    assert isinstance(dev.compute_capability(), tuple)
    assert isinstance(dev.get_attributes(), dict)


def _finish_context(ctx):
    ctx.pop()
    clear_context_caches()
    import gc

    gc.collect()


def mark_cuda_test(inner_f):
    """Runs the test in a fresh default context, popped afterwards; marked `gpu` for pytest.

    Parameters
    ----------
    inner_f : collections.abc.Callable
        A test function.

    Returns
    -------
    collections.abc.Callable
        The test run in a fresh context.
    """

    @functools.wraps(inner_f)
    def f(*args, **kwargs):
        cuda.init()
        ctx = make_default_context()
        try:
            _check_context(ctx)
            inner_f(*args, **kwargs)
        finally:
            _finish_context(ctx)

    try:
        import pytest
    except ImportError:
        return f
    return pytest.mark.gpu(f)


def init_cuda_context_fixture():
    """Generator for a pytest fixture: a fresh default context for the test (yielded), popped
    afterwards; ``yield from init_cuda_context_fixture()``."""
    cuda.init()
    ctx = make_default_context()
    try:
        _check_context(ctx)
        yield ctx
    finally:
        _finish_context(ctx)


# }}}


__all__ = [
    "Argument",
    "DebugMemoryPool",
    "DeviceData",
    "DeviceMemoryPool",
    "OccupancyRecord",
    "PageLockedAllocator",
    "PageLockedMemoryPool",
    "ScalarArg",
    "TypeNameNotKnown",
    "VectorArg",
    "bitlog2",
    "clear_context_caches",
    "context_dependent_memoize",
    "context_dependent_memoized_functions",
    "dtype_to_ctype",
    "get_arg_type",
    "get_default_device",
    "get_or_register_dtype",
    "init_cuda_context_fixture",
    "make_default_context",
    "mark_cuda_test",
    "parse_c_arg",
    "register_dtype",
]

__dir__ = _public_dir(__all__)
