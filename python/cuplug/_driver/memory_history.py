"""Who holds device memory, for cuplug.memory: the Python call site of every live allocator block
(record_history, recording, snapshot), shaped like tracemalloc's snapshots.

While nothing records, no observer is installed and an allocator's door costs one atomic load;
while recording, each allocation reads the caller's frames (outside the cuplug package) and each
free takes its block out of the record.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from cuplug import _core
from cuplug._driver.memory_table import size_text

__all__ = [
    "Block",
    "CallSite",
    "Frame",
    "MemoryEvent",
    "MemorySnapshot",
    "Recording",
    "is_recording",
    "record_history",
    "recording",
    "snapshot",
    "top_call_sites_text",
]

_history = _core._memory_history

# Frames in files under this folder are cuplug's own: a call site is the first frame outside.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


@dataclass(frozen=True)
class Frame:
    """One frame of a call site: the file, the line and the function (its qualified name)."""

    filename: str
    lineno: int
    function: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} in {self.function}"


@dataclass(frozen=True)
class Block:
    """A live block: its address and requested size, the allocator backend that made it, the
    call site's frames (innermost first; empty: no Python code was running), and when it was
    allocated (``time.monotonic_ns()``'s clock)."""

    address: int
    size: int
    allocator: str
    frames: tuple[Frame, ...]
    time_ns: int


@dataclass(frozen=True)
class MemoryEvent:
    """An allocation (``action`` "alloc") or a free ("free") of a recorded block, with the call
    site that allocated it."""

    time_ns: int
    action: str
    address: int
    size: int
    allocator: str
    frames: tuple[Frame, ...]


def _site_text(frames: tuple[Frame, ...]) -> str:
    return str(frames[0]) if frames else "<no Python frame>"


@dataclass(frozen=True)
class CallSite:
    """The live blocks of one call site: their total requested ``size`` and their ``count``."""

    frames: tuple[Frame, ...]
    size: int
    count: int

    def __str__(self) -> str:
        blocks = "block" if self.count == 1 else "blocks"
        return f"{size_text(self.size)} in {self.count} {blocks}: {_site_text(self.frames)}"


@dataclass(frozen=True)
class MemorySnapshot:
    """The record at one moment: the live ``blocks`` allocated since the record started, the last
    ``events`` (oldest first; ``events_dropped`` older ones were not kept), the ``frames`` kept
    per call site, and when the record started and the snapshot was taken (``time.monotonic_ns``'s
    clock)."""

    blocks: tuple[Block, ...]
    events: tuple[MemoryEvent, ...]
    events_dropped: int
    frames: int
    started_ns: int
    time_ns: int

    @property
    def total_size(self) -> int:
        """Requested bytes of the live blocks."""
        return sum(b.size for b in self.blocks)

    def call_sites(self, limit: int | None = None) -> list[CallSite]:
        """The live bytes and blocks per call site, the largest first.

        Parameters
        ----------
        limit : int | None
            At most this many; None: all.

        Returns
        -------
        list[CallSite]
            One entry per call site that holds live blocks.
        """
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise TypeError(f"call_sites: limit must be an int or None, not {type(limit).__name__}")
        totals: dict[tuple[Frame, ...], list[int]] = {}
        for b in self.blocks:
            entry = totals.setdefault(b.frames, [0, 0])
            entry[0] += b.size
            entry[1] += 1
        sites = [CallSite(frames, size, count) for frames, (size, count) in totals.items()]
        sites.sort(key=lambda s: (-s.size, _site_text(s.frames)))
        return sites if limit is None else sites[: max(limit, 0)]

    def format(self, limit: int = 10) -> str:
        """The top call sites as text, one line per frame, under a line with the total.

        Parameters
        ----------
        limit : int
            Call sites listed; the rest are summed up on one line.

        Returns
        -------
        str
            Lines separated by newlines, without a newline at the end.
        """
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"format: limit must be an int, not {type(limit).__name__}")
        return top_call_sites_text(self, limit)

    def __str__(self) -> str:
        return self.format()


def top_call_sites_text(snap: MemorySnapshot, limit: int) -> str:
    """The lines memory.summary() and MemorySnapshot.format() show."""
    sites = snap.call_sites()
    head = (
        f"top call sites: {size_text(snap.total_size)} in {len(snap.blocks)} live blocks "
        f"recorded, {len(sites)} call sites"
    )
    lines = [head]
    for site in sites[:limit]:
        lines.append(f"  {size_text(site.size):>10}  {site.count:>6}  {_site_text(site.frames)}")
        lines.extend(f"  {'':>10}  {'':>6}    {f}" for f in site.frames[1:])
    if len(sites) > limit:
        rest = sites[limit:]
        lines.append(
            f"  {size_text(sum(s.size for s in rest)):>10}  {sum(s.count for s in rest):>6}  "
            f"({len(rest)} more call sites)"
        )
    return "\n".join(lines)


def _check_int(value, name: str, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"memory.record_history: {name} must be an int, not {type(value).__name__}")
    if value < low:
        raise ValueError(f"memory.record_history: {name} must be >= {low}, not {value}")


def record_history(enabled: bool = True, *, frames: int = 1, max_events: int = 100_000) -> None:
    """Starts or stops recording the Python call site of every allocator block.

    While on, each block allocated through an allocator backend (``mem_alloc``, GPUArrays,
    ``DeviceMemoryPool``, ``PageLockedMemoryPool``, an ``Allocator``'s ``allocate``) is recorded
    with the innermost ``frames`` frames of the code that asked for it, outside the cuplug
    package; freeing it takes it out of the record. A pool's own calls to its upstream are not
    recorded: the user's block is. :func:`snapshot` returns the record and :func:`summary` adds
    its top call sites. Off (the default), allocations cost nothing more; turning it off forgets
    the record (as ``tracemalloc.stop()`` does).

    Parameters
    ----------
    enabled : bool
        True: start (RuntimeError if it records already); False: stop and forget (nothing
        happens if it does not record).
    frames : int
        Frames kept per call site, >= 1 (more cost more per allocation).
    max_events : int
        How many of the last allocation and free events to keep for :func:`plot`, >= 0.
    """
    if not isinstance(enabled, bool):
        raise TypeError(
            f"memory.record_history: enabled must be True or False, not {type(enabled).__name__}"
        )
    if not enabled:
        _history.stop()
        return
    _check_int(frames, "frames", 1)
    _check_int(max_events, "max_events", 0)
    if _history.recording():
        raise RuntimeError(
            "memory.record_history: the history is recorded already; call "
            "cuplug.memory.record_history(False) first to start again"
        )
    _history.start(frames, max_events, _PACKAGE)


def is_recording() -> bool:
    """Whether :func:`record_history` records now."""
    return _history.recording()


def snapshot() -> MemorySnapshot:
    """The record of :func:`record_history` now: its live blocks, their call sites and the
    last events. RuntimeError while nothing records.

    Returns
    -------
    MemorySnapshot
        Blocks, events and call sites (``call_sites()``), printable.
    """
    if not _history.recording():
        raise RuntimeError(
            "memory.snapshot: no history is recorded; call cuplug.memory.record_history(True) "
            "(or use cuplug.memory.recording()) before the allocations to look at"
        )
    taken = time.monotonic_ns()
    sites, names, blocks, events, dropped, frames, _max, started = _history.snapshot()
    frames_of = [tuple(Frame(*f) for f in site) for site in sites] or [()]
    return MemorySnapshot(
        blocks=tuple(
            Block(address, size, names[name], frames_of[site], t)
            for address, size, site, name, t in sorted(blocks, key=lambda b: b[4])
        ),
        events=tuple(
            MemoryEvent(t, action, address, size, names[name], frames_of[site])
            for t, action, address, size, site, name in events
        ),
        events_dropped=dropped,
        frames=frames,
        started_ns=started,
        time_ns=taken,
    )


class Recording:
    """What :func:`recording` yields: ``snapshot`` is the record as the block ended (None
    inside it)."""

    def __init__(self) -> None:
        self.snapshot: MemorySnapshot | None = None


@contextmanager
def recording(*, frames: int = 1, max_events: int = 100_000) -> Iterator[Recording]:
    """Records call sites for the ``with`` block (:func:`record_history` on, then off); the
    object it yields gets the record as the block ended::

        with cuplug.memory.recording() as rec:
            work()
        print(rec.snapshot)          # the blocks still live at the end, by call site

    Parameters
    ----------
    frames : int
        As for :func:`record_history`.
    max_events : int
        As for :func:`record_history`.
    """
    record_history(True, frames=frames, max_events=max_events)
    rec = Recording()
    try:
        yield rec
        rec.snapshot = snapshot()
    finally:
        record_history(False)
