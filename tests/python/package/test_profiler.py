"""cuplug.profiler against the fake driver: NVTX ranges nest and close on errors, decorators keep
the function, benchmark() times what it is given and checks its arguments. That the ranges appear
in Nsight Systems is checked on the GPU machine (nsys)."""

from __future__ import annotations

import numpy as np
import pytest

from cuplug import _core, profiler


def test_ranges_open_and_close_even_when_the_block_raises(monkeypatch):
    calls = []
    monkeypatch.setattr(_core._nvtx, "range_push", lambda m, c=None: calls.append(("push", m, c)))
    monkeypatch.setattr(_core._nvtx, "range_pop", lambda: calls.append(("pop",)))
    with profiler.time_range("outer", argb_color=0xFF00FF00):
        with pytest.raises(KeyError):
            with profiler.time_range("inner"):
                raise KeyError("x")
    assert calls == [("push", "outer", 0xFF00FF00), ("push", "inner", None), ("pop",), ("pop",)]


def test_the_decorator_names_the_range_after_the_function(monkeypatch):
    pushed = []
    monkeypatch.setattr(_core._nvtx, "range_push", lambda m, c=None: pushed.append(m))

    @profiler.time_range()
    def step(x, y=1):
        """Docs kept."""
        return x + y

    assert step(1, y=2) == 3 and step.__doc__ == "Docs kept." and step.__name__ == "step"
    assert pushed == [step.__qualname__]


def test_without_a_tool_the_calls_do_nothing_visible():
    with profiler.time_range("plain"):
        profiler.mark("here", 0x80FF0000)


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match="needs a message"):
        with profiler.time_range():
            pass
    with pytest.raises(TypeError, match="message must be a str"):
        profiler.time_range(3)
    with pytest.raises(ValueError, match="argb_color must be an int 0xAARRGGBB"):
        profiler.time_range("x", argb_color=-1)
    with pytest.raises(TypeError, match="func must be callable"):
        profiler.benchmark(3)
    with pytest.raises(ValueError, match="n_repeat must be an int >= 1"):
        profiler.benchmark(print, n_repeat=0)


@pytest.mark.gpu
def test_benchmark_times_each_run(ctx):
    runs = []
    result = profiler.benchmark(lambda k: runs.append(k), (7,), n_repeat=5, n_warmup=2, name="f")
    assert runs == [7] * 7
    assert result.name == "f" and result.cpu_times.shape == (5,) and result.gpu_times.shape == (5,)
    assert np.all(result.cpu_times >= 0) and np.all(result.gpu_times >= 0)
    assert "CPU:" in str(result) and "GPU:" in str(result)
    once = profiler.benchmark(lambda: None, n_repeat=100, max_duration=0.0)
    assert once.cpu_times.shape == (1,)
