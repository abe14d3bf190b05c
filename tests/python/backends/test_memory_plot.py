"""cuplug.memory.plot and ``python -m cuplug memory-plot``: memory in use over time, per call site
from a history snapshot, in total from a "logging" allocator's log. The series are checked
without matplotlib; drawing needs it (skipped, with the reason, where it is not installed: CI
does not install it)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

import cuplug
import cuplug.memory as memory
from cuplug.__main__ import main
from cuplug._driver import memory_plot

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = pytest.mark.skipif(
    not HAVE_MATPLOTLIB, reason="matplotlib is not installed (pip install matplotlib)"
)


@pytest.fixture(autouse=True)
def _history_off():
    memory.record_history(False)
    yield
    memory.record_history(False)


def _site_a(a, n):
    return a.allocate(n)


def _site_b(a, n):
    return a.allocate(n)


def _recorded(**options):
    """A snapshot of: a 100 at site a, b 1000 at site b, a freed, c 10 at site a (live: b, c)."""
    a = memory.create("host")
    memory.record_history(True, **options)
    p = _site_a(a, 100)
    q = _site_b(a, 1000)
    a.deallocate(p, 100)
    r = _site_a(a, 10)
    snap = memory.snapshot()
    memory.record_history(False)
    a.deallocate(q, 1000)
    a.deallocate(r, 10)
    return snap


def _key(snap, function):
    return next(str(e.frames[0]) for e in snap.events if e.frames[0].function == function)


def test_series_per_call_site_follow_the_events():
    snap = _recorded()
    times, series = memory_plot.series_from_snapshot(snap, top=5)
    a, b = _key(snap, "_site_a"), _key(snap, "_site_b")
    assert set(series) == {a, b}
    assert series[a] == [0, 100, 100, 0, 10, 10]  # before any event, after each, at the snapshot
    assert series[b] == [0, 0, 1000, 1000, 1000, 1000]
    assert times == sorted(times) and times[0] >= 0


def test_series_end_right_when_old_events_were_dropped():
    snap = _recorded(max_events=2)  # only "free a" and "alloc c" kept
    _times, series = memory_plot.series_from_snapshot(snap, top=5)
    a, b = _key(snap, "_site_a"), str(snap.blocks[0].frames[0])
    assert series[a] == [100, 0, 10, 10]
    assert series[b] == [1000, 1000, 1000, 1000]  # allocated before the kept events: still there


def test_sites_beyond_top_are_drawn_as_other():
    snap = _recorded()
    _times, series = memory_plot.series_from_snapshot(snap, top=1)
    b = _key(snap, "_site_b")
    assert list(series) == [b, "other"]
    assert series["other"] == [0, 100, 100, 0, 10, 10]


def test_series_from_a_log(tmp_path):
    log = tmp_path / "alloc.log"
    with cuplug.using(
        allocator="logging", allocator_options={"upstream": "host", "path": str(log)}
    ):
        a = memory.current()
        p = a.allocate(300)
        q = a.allocate(700)
        a.deallocate(p, 300)
        a.deallocate(q, 700)
    _times, series = memory_plot.series_from_log(memory.read_log(log))
    assert series == {"in use": [300, 1000, 700, 0]}


def test_without_matplotlib_the_error_names_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as if absent
    with pytest.raises(ImportError, match="needs matplotlib|draws with matplotlib.*pip install"):
        memory.plot(_recorded(), tmp_path / "m.png")


@pytest.mark.parametrize(
    ("args", "error", "text"),
    [
        ((42, "m.png"), TypeError, "source must be a MemorySnapshot, a log file path or a list"),
        ((["x"], "m.png"), TypeError, "source must be a MemorySnapshot"),
    ],
)
def test_bad_sources_are_named(args, error, text):
    with pytest.raises(error, match=text):
        memory.plot(*args)


def test_labels_and_units():
    assert memory_plot._legend_label("/a/b/script.py:12 in load") == "script.py:12 in load"
    assert memory_plot._legend_label("other") == "other"
    assert memory_plot._unit({"a": [0, 3 << 20], "b": [1 << 30, 0]}) == (1 << 30, "GiB")
    assert memory_plot._unit({"a": [512, 1000]}) == (1, "bytes")
    assert memory_plot._unit({"a": [2048]}) == (1 << 10, "KiB")
    assert memory_plot._unit({}) == (1, "bytes")


def test_bad_top_is_named():
    with pytest.raises(ValueError, match="top must be >= 1, not 0"):
        memory.plot(_recorded(), "m.png", top=0)
    with pytest.raises(TypeError, match="top must be an int, not float"):
        memory.plot(_recorded(), "m.png", top=2.0)
    with pytest.raises(ValueError, match="x must be 'time' or 'events', not 'steps'"):
        memory.plot(_recorded(), "m.png", x="steps")


def test_memory_plot_command_reports_a_missing_log(tmp_path, capsys):
    assert main(["memory-plot", str(tmp_path / "none.log"), "-o", str(tmp_path / "m.png")]) == 1
    assert "memory-plot: " in capsys.readouterr().err
    assert not (tmp_path / "m.png").exists()


@needs_matplotlib
def test_a_snapshot_is_drawn_to_a_png(tmp_path):
    out = memory.plot(_recorded(), tmp_path / "m.png", x="events", title="test")
    assert out == str(tmp_path / "m.png")
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@needs_matplotlib
def test_memory_plot_command_draws_a_log(tmp_path, capsys):
    log = tmp_path / "alloc.log"
    with cuplug.using(
        allocator="logging", allocator_options={"upstream": "host", "path": str(log)}
    ):
        a = memory.current()
        a.deallocate(a.allocate(4096), 4096)
    assert main(["memory-plot", str(log), "-o", str(tmp_path / "m.svg")]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'm.svg'}\n"
    assert b"<svg" in (tmp_path / "m.svg").read_bytes()[:500]
