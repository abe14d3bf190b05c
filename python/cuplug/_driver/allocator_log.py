"""The "logging" allocator's log for cuplug.memory: reading it (read_log, LogEvent) and running it
again against any allocator (replay)."""

from __future__ import annotations

import os
import re
import time
import warnings
from dataclasses import dataclass, field

from cuplug import _core

Allocator = _core.allocators.Allocator

__all__ = ["LogEvent", "read_log", "replay"]


@dataclass(frozen=True)
class LogEvent:
    """One line of a "logging" allocator's log (format v1)."""

    seq: int
    time_ns: int
    thread: int
    event: str  # allocate, allocate_failed, deallocate, free_held, trim
    ptr: int
    nbytes: int
    stream: int
    #: Where it was read from (read_log()): the file and its line; "" and 0 for an event made
    #: otherwise. Replay errors name them.
    path: str = field(default="", compare=False, repr=False)
    line: int = field(default=0, compare=False, repr=False)


_EVENTS = {"allocate", "allocate_failed", "deallocate", "free_held", "trim"}


# What the logging allocator writes where events could not be written (a full disk).
_GAP = re.compile(r"# (\d+) events missing here \((\d+) to (\d+)\)")


def _cut_short(fields: list[str], first_missing: int, last_missing: int) -> bool:
    """Whether a line just before a gap mark is the start of one of the missing events."""
    try:
        return first_missing <= int(fields[0]) <= last_missing
    except (IndexError, ValueError):
        return True


def read_log(path: str | os.PathLike) -> list[LogEvent]:
    """The events of a "logging" allocator's log, in the order they happened.

    ValueError names the file and line of anything that is not a v1 event line. Where the log
    says events are missing (its file could not be written), a warning says how many: a replay
    of such a log is not faithful.

    Parameters
    ----------
    path : str | os.PathLike
        The log file a "logging" allocator wrote.

    Returns
    -------
    list[LogEvent]
        Its events, in order.
    """
    events = []
    missing = 0
    with open(path) as f:
        lines = [line.strip() for line in f]
    for number, line in enumerate(lines, 1):
        if not line or line.startswith("#"):
            gap = _GAP.match(line)
            missing += int(gap.group(1)) if gap else 0
            continue
        fields = line.split()
        gap = _GAP.match(next((later for later in lines[number:] if later), ""))
        if gap and _cut_short(fields, int(gap.group(2)), int(gap.group(3))):
            continue  # the failure that the mark below reports cut this line short
        try:
            if len(fields) != 7 or fields[3] not in _EVENTS:
                raise ValueError("expected 'seq time_ns thread event ptr bytes stream'")
            seq, time_ns, thread = int(fields[0]), int(fields[1]), int(fields[2])
            ptr, nbytes, stream = int(fields[4], 16), int(fields[5]), int(fields[6], 16)
            for what, value in (("address", ptr), ("size", nbytes), ("stream", stream)):
                if not 0 <= value < 1 << 64:
                    raise ValueError(f"the {what} {value} is not a 64-bit unsigned number")
        except ValueError as e:
            raise ValueError(
                f"{os.fspath(path)}:{number}: not an allocator log line ({e}): {line!r}"
            ) from None
        events.append(
            LogEvent(seq, time_ns, thread, fields[3], ptr, nbytes, stream, os.fspath(path), number)
        )
    if missing:
        warnings.warn(
            f"{os.fspath(path)}: {missing} events are missing from this log (writing them "
            "failed); replaying it will not reproduce what happened",
            RuntimeWarning,
            stacklevel=2,
        )
    events.sort(key=lambda e: e.seq)
    return events


def replay(
    log: str | os.PathLike | list[LogEvent],
    allocator: Allocator | str | None = None,
    *,
    stream=None,
    free_remaining: bool = True,
) -> dict:
    """Runs a "logging" allocator's log against ``allocator`` (a name, an Allocator, or None for
    the current one), in the logged order, on ``stream`` (the logged streams belonged to
    another process).

    Each logged allocation is made again and each logged free frees the block that replaced
    it; failed allocations are tried again; free_held / trim are repeated. Blocks still live at
    the end are freed unless ``free_remaining`` is false. Returns a summary: ``events``,
    ``allocations``, ``deallocations``, ``failures`` (allocations that failed now),
    ``unmatched`` (frees of blocks the log never allocated), ``peak_bytes`` (of live requested
    bytes during the replay), ``live_at_end`` and ``seconds``. An error that stops the replay
    names the event's file and line (read_log()), or its index in a list of events, and comes
    after every block replayed so far was freed.

    Parameters
    ----------
    log : str | os.PathLike | list[LogEvent]
        A log file, or its events from read_log().
    allocator : Allocator | str | None
        What to replay against; None: the current allocator.
    stream : Stream | None
        The stream every replayed event is ordered on.
    free_remaining : bool
        Whether blocks still live at the end are freed.

    Returns
    -------
    dict
        The summary described above.
    """
    events = log if isinstance(log, list) else read_log(log)
    if allocator is None:
        allocator = _core.allocators.current()
    elif isinstance(allocator, str):
        allocator = _core.allocators.create(allocator, {})
    stream_handle = 0 if stream is None else stream
    live: dict[int, tuple[int, int]] = {}
    summary = dict(
        events=len(events),
        allocations=0,
        deallocations=0,
        failures=0,
        unmatched=0,
        peak_bytes=0,
        live_at_end=0,
        seconds=0.0,
    )
    live_bytes = 0
    start = time.perf_counter()
    index = 0  # of the event being replayed
    try:
        for e in events:
            live_bytes = _replay_one(e, allocator, stream_handle, live, live_bytes, summary)
            index += 1
    except BaseException as err:
        # Nothing replayed so far is left allocated, whatever stopped the replay.
        for new, nbytes in live.values():
            try:
                allocator.deallocate(new, nbytes, stream_handle)
            except Exception:  # noqa: BLE001, S110 - the first error is the one to report
                pass
        if not isinstance(err, Exception):
            raise  # KeyboardInterrupt, SystemExit: as they are
        raise _replay_error(err, events[index], index) from err
    summary["live_at_end"] = len(live)
    if free_remaining:
        for new, nbytes in live.values():
            allocator.deallocate(new, nbytes, stream_handle)
            summary["deallocations"] += 1
    summary["seconds"] = time.perf_counter() - start
    return summary


def _replay_error(err: Exception, e: LogEvent, index: int) -> Exception:
    """``err`` of replaying ``e``, the index-th event, with where ``e`` came from in front."""
    where = f"{e.path}:{e.line}" if e.path else f"event {index} of the list"
    text = f"{where}: replaying '{e.event}' of {e.nbytes} bytes (seq {e.seq}) failed: {err}"
    try:
        return type(err)(text)
    except Exception:  # noqa: BLE001 - a class that takes other arguments
        return RuntimeError(f"{text} ({type(err).__name__})")


def _replay_one(e: LogEvent, allocator, stream_handle, live: dict, live_bytes: int, summary):
    """Replays one event; returns the live requested bytes after it."""
    if e.event in ("allocate", "allocate_failed"):
        try:
            new = allocator.allocate(e.nbytes, stream_handle)
        except _core.Error:
            summary["failures"] += 1
            return live_bytes
        summary["allocations"] += 1
        if e.event == "allocate_failed":  # it fits now: give it back straight away
            allocator.deallocate(new, e.nbytes, stream_handle)
            summary["deallocations"] += 1
            return live_bytes
        live[e.ptr] = (new, e.nbytes)
        live_bytes += e.nbytes
        summary["peak_bytes"] = max(summary["peak_bytes"], live_bytes)
    elif e.event == "deallocate":
        entry = live.pop(e.ptr, None)
        if entry is None:
            summary["unmatched"] += 1
            return live_bytes
        allocator.deallocate(entry[0], entry[1], stream_handle)
        live_bytes -= entry[1]
        summary["deallocations"] += 1
    elif e.event == "free_held":
        if allocator.can_free_held:
            allocator.free_held()
    elif e.event == "trim":
        if allocator.can_free_held:
            allocator.trim(e.nbytes)
    return live_bytes
