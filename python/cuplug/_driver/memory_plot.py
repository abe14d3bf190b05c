"""Pictures of memory use over time for cuplug.memory.plot and ``python -m cuplug memory-plot``:
bytes in use per call site from a history snapshot, or in use from a "logging" allocator's log.
Drawn with matplotlib's object API (no pyplot state, no display needed)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from cuplug._driver.allocator_log import LogEvent, read_log
from cuplug._driver.memory_history import MemorySnapshot, _site_text

__all__ = ["plot", "series_from_log", "series_from_snapshot"]

Series = tuple[list[float], dict[str, list[int]]]  # times (s), bytes per label at those times


def series_from_snapshot(snap: MemorySnapshot, top: int) -> Series:
    """Bytes in use over the snapshot's kept events, for its ``top`` call sites (by the most each
    held at once) and the rest as "other". Walked back from the live blocks, so a record whose
    oldest events were dropped still ends right."""
    now: dict[str, int] = {}
    for b in snap.blocks:
        key = _site_text(b.frames)
        now[key] = now.get(key, 0) + b.size
    # Back in time from the snapshot: before an allocation its bytes were not held yet, before a
    # free they still were.
    state = dict(now)
    after: list[tuple[int, dict[str, int]]] = []  # (event time, bytes after it), last first
    for e in reversed(snap.events):
        after.append((e.time_ns, dict(state)))
        key = _site_text(e.frames)
        state[key] = state.get(key, 0) + (-e.size if e.action == "alloc" else e.size)
    first = snap.events[0].time_ns if snap.events_dropped and snap.events else snap.started_ns
    steps = [(first, state), *reversed(after), (snap.time_ns, now)]
    peaks: dict[str, int] = {}
    for _t, held in steps:
        for key, n in held.items():
            peaks[key] = max(peaks.get(key, 0), n)
    ranked = sorted((k for k in peaks if peaks[k] > 0), key=lambda k: (-peaks[k], k))
    chosen = ranked[:top]
    start = snap.started_ns
    times = [(t - start) / 1e9 for t, _ in steps]
    series = {k: [held.get(k, 0) for _t, held in steps] for k in chosen}
    if len(ranked) > top:
        series["other"] = [sum(n for k, n in held.items() if k not in chosen) for _t, held in steps]
    return times, series


def series_from_log(events: Sequence[LogEvent]) -> Series:
    """Bytes in use after each event of a "logging" allocator's log, from its first event."""
    live: dict[int, int] = {}
    in_use = 0
    times: list[float] = []
    values: list[int] = []
    start = events[0].time_ns if events else 0
    for e in events:
        if e.event == "allocate":
            live[e.ptr] = e.nbytes
            in_use += e.nbytes
        elif e.event == "deallocate":
            in_use -= live.pop(e.ptr, 0)
        times.append((e.time_ns - start) / 1e9)
        values.append(in_use)
    return times, {"in use": values}


def _legend_label(key: str) -> str:
    """A series' label without its file's folder: "script.py:12 in load" (keys hold the path)."""
    return key if key == "other" or ":" not in key else os.path.basename(key)


_UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "bytes"))


def _unit(series: dict[str, list[int]]) -> tuple[int, str]:
    """The largest unit the stacked peak is at least one of."""
    columns = zip(*series.values()) if series else iter(())
    peak = max((sum(c) for c in columns), default=0)
    return next((size, name) for size, name in _UNITS if peak >= size or size == 1)


def _figure():
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError(
            "cuplug.memory.plot draws with matplotlib, which is not installed: "
            "pip install matplotlib"
        ) from e
    return Figure(figsize=(10, 5), layout="constrained")


def plot(
    source: MemorySnapshot | str | os.PathLike | Sequence[LogEvent],
    path: str | os.PathLike,
    *,
    top: int = 8,
    x: str = "time",
    title: str | None = None,
) -> str:
    """Draws memory in use over time to the image file ``path`` (its extension picks the format:
    .png, .svg, .pdf) and returns the path.

    From a :class:`MemorySnapshot` (:func:`snapshot`): stacked areas of the bytes each of the
    ``top`` call sites held, the rest as "other", over the kept events. From a "logging"
    allocator's log (a path, or :func:`read_log`'s events): the bytes in use over time. Needs
    matplotlib (ImportError naming it otherwise).

    Parameters
    ----------
    source : MemorySnapshot | str | os.PathLike | Sequence[LogEvent]
        A history snapshot, a log file, or its events.
    path : str | os.PathLike
        The image file to write.
    top : int
        Call sites drawn apart, >= 1.
    x : str
        "time": seconds since the record (or log) started; "events": the event's number, which
        spreads out bursts that a long pause (a first compile) would squeeze.
    title : str | None
        The figure's title; None: one saying what was drawn.

    Returns
    -------
    str
        ``path``.
    """
    if isinstance(top, bool) or not isinstance(top, int):
        raise TypeError(f"memory.plot: top must be an int, not {type(top).__name__}")
    if top < 1:
        raise ValueError(f"memory.plot: top must be >= 1, not {top}")
    if x not in ("time", "events"):
        raise ValueError(f"memory.plot: x must be 'time' or 'events', not {x!r}")
    if isinstance(source, MemorySnapshot):
        times, series = series_from_snapshot(source, top)
        default_title = f"cuplug memory in use by call site ({len(source.events)} events)"
        if source.events_dropped:
            default_title += f", {source.events_dropped} earlier events not kept"
    elif isinstance(source, (str, os.PathLike)):
        times, series = series_from_log(read_log(source))
        default_title = f"cuplug memory in use ({os.path.basename(os.fspath(source))})"
    elif isinstance(source, Sequence) and all(isinstance(e, LogEvent) for e in source):
        times, series = series_from_log(source)
        default_title = "cuplug memory in use"
    else:
        raise TypeError(
            "memory.plot: source must be a MemorySnapshot, a log file path or a list of "
            f"LogEvent, not {type(source).__name__}"
        )
    fig = _figure()
    ax = fig.subplots()
    size, unit = _unit(series)
    xs = times if x == "time" else list(range(len(times)))
    if times and series:
        keys = list(series)
        ax.stackplot(
            xs,
            *([n / size for n in series[k]] for k in keys),
            labels=[_legend_label(k) for k in keys],
            step="post",
        )
        ax.legend(loc="upper left", fontsize="small")
    else:
        ax.text(0.5, 0.5, "no events recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("seconds since the record started" if x == "time" else "event")
    ax.set_ylabel(f"{unit} in use")
    ax.set_title(title if title is not None else default_title)
    fig.savefig(os.fspath(path))
    return os.fspath(path)
