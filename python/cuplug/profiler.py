"""Profiling: NVTX ranges that Nsight Systems shows, the profiler's start and stop, and
:func:`benchmark`, which times a function's CPU and GPU time (CuPy's
``cupyx.profiler.benchmark`` is the model).

cuplug labels its own work in an NVTX domain of its own, ``cuplug``: each kernel launch (a range
named after the kernel) and each compile that is not a memory-cache hit (``cuplug compile``).
:func:`time_range` and :func:`mark` are the user's, in NVTX's default domain, as CuPy's and
PyTorch's are. Without a tool attached, NVTX does nothing but a call through a pointer.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any, Callable

import numpy as np

from cuplug import _core
from cuplug._public import public_dir as _public_dir

__all__ = ["BenchmarkResult", "benchmark", "mark", "start", "stop", "time_range"]


def _argb(argb_color):
    if argb_color is None:
        return None
    if not isinstance(argb_color, int) or not 0 <= argb_color <= 0xFFFFFFFF:
        raise ValueError(f"argb_color must be an int 0xAARRGGBB, got {argb_color!r}")
    return argb_color


class time_range:
    """An NVTX range around a block (``with time_range("step"):``) or every call of a function
    (``@time_range("step")``), nested per thread, shown by Nsight Systems on the thread's row.

    Parameters
    ----------
    message : str or None
        The range's name; None: the decorated function's qualified name (a decorator needs
        none; a ``with`` block does).
    argb_color : int or None
        The colour, 0xAARRGGBB.
    sync : bool
        Wait for the current context's work before the range opens and before it closes, so
        that it spans the GPU work the block issued, not only the issuing.
    """

    def __init__(self, message: str | None = None, argb_color: int | None = None, sync=False):
        if message is not None and not isinstance(message, str):
            raise TypeError(f"time_range: message must be a str, got {type(message).__name__}")
        self.message = message
        self.argb_color = _argb(argb_color)
        self.sync = bool(sync)

    def __enter__(self) -> time_range:
        if self.message is None:
            raise ValueError("time_range: a with block needs a message (the range's name)")
        if self.sync:
            _core.Context.synchronize()
        _core._nvtx.range_push(self.message, self.argb_color)
        return self

    def __exit__(self, *exc) -> None:
        if self.sync:
            _core.Context.synchronize()
        _core._nvtx.range_pop()

    def __call__(self, func: Callable) -> Callable:
        """Decorates `func`: each call runs inside the range.

        Parameters
        ----------
        func : callable
            The function to time.
        """
        message = self.message or getattr(func, "__qualname__", repr(func))
        inner = time_range(message, self.argb_color, self.sync)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with inner:
                return func(*args, **kwargs)

        return wrapper


def mark(message: str, argb_color: int | None = None) -> None:
    """An instant NVTX event on this thread's row (nvtxMarkEx).

    Parameters
    ----------
    message : str
        The event's name.
    argb_color : int or None
        The colour, 0xAARRGGBB.
    """
    _core._nvtx.mark(message, _argb(argb_color))


def start() -> None:
    """Starts the profiler's collection in the current context (cuProfilerStart; PyCUDA's
    ``driver.start_profiler``): with ``nsys profile --capture-range=cudaProfilerApi``, only
    what runs between start() and stop() is recorded."""
    _core.start_profiler()


def stop() -> None:
    """Stops the profiler's collection in the current context (cuProfilerStop)."""
    _core.stop_profiler()


class BenchmarkResult:
    """What :func:`benchmark` measured: ``cpu_times`` and ``gpu_times`` (seconds, one per run,
    NumPy arrays), ``name``; ``str()`` gives mean +/- std, min and max of each in microseconds.
    """

    def __init__(self, name: str, cpu_times: np.ndarray, gpu_times: np.ndarray):
        self.name = name
        self.cpu_times = cpu_times
        self.gpu_times = gpu_times

    @staticmethod
    def _line(label: str, times: np.ndarray) -> str:
        us = times * 1e6
        return (
            f"{label}: {us.mean():10.3f} us +/- {us.std():8.3f} "
            f"(min: {us.min():10.3f} / max: {us.max():10.3f}) us"
        )

    def __repr__(self) -> str:
        return (
            f"{self.name:<20s}: {self._line('CPU', self.cpu_times)}    "
            f"{self._line('GPU', self.gpu_times)}"
        )

    __str__ = __repr__


def benchmark(
    func: Callable,
    args: tuple = (),
    kwargs: dict | None = None,
    n_repeat: int = 10000,
    *,
    name: str | None = None,
    n_warmup: int = 10,
    max_duration: float = math.inf,
    stream: Any = None,
) -> BenchmarkResult:
    """Times ``func(*args, **kwargs)``: the CPU time of each call (``time.perf_counter``) and
    the GPU time of the work it issued on `stream` (CUDA events recorded before and after each
    call; the host waits for the end event, so runs do not overlap).

    Parameters
    ----------
    func : callable
        What to time.
    args : tuple
        Its positional arguments.
    kwargs : dict or None
        Its keyword arguments.
    n_repeat : int
        How many timed runs (at least 1).
    name : str or None
        The result's label; None: func's name.
    n_warmup : int
        Untimed runs first (compiles, caches).
    max_duration : float
        Seconds after which no further run starts (at least one runs).
    stream : Stream or None
        The stream the events are recorded on; None: the legacy default stream.

    Returns
    -------
    BenchmarkResult
        ``cpu_times`` and ``gpu_times`` in seconds.
    """
    if not callable(func):
        raise TypeError(f"benchmark: func must be callable, got {type(func).__name__}")
    if not isinstance(n_repeat, int) or n_repeat < 1:
        raise ValueError(f"benchmark: n_repeat must be an int >= 1, got {n_repeat!r}")
    if not isinstance(n_warmup, int) or n_warmup < 0:
        raise ValueError(f"benchmark: n_warmup must be an int >= 0, got {n_warmup!r}")
    kwargs = {} if kwargs is None else kwargs
    name = name if name is not None else getattr(func, "__name__", repr(func))
    for _ in range(n_warmup):
        func(*args, **kwargs)
    start_event, end_event = _core.Event(), _core.Event()
    cpu, gpu = [], []
    deadline = time.perf_counter() + max_duration
    for _ in range(n_repeat):
        start_event.record(stream)
        t0 = time.perf_counter()
        func(*args, **kwargs)
        t1 = time.perf_counter()
        end_event.record(stream)
        end_event.synchronize()
        cpu.append(t1 - t0)
        gpu.append(end_event.time_since(start_event) / 1e3)
        if t1 >= deadline:
            break
    return BenchmarkResult(name, np.array(cpu), np.array(gpu))


__dir__ = _public_dir(__all__)
