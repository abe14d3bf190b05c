"""Allocator backends from Python: statistics, allocators written in Python, replaying logs.

Every cuplug allocation (``mem_alloc``, and the array layer) comes from the selected allocator
backend; ``cuplug.use(allocator="pool")`` switches it for the whole process::

    cuplug.use(allocator="pool")
    cuplug.memory.stats()          # {'backend': 'pool', 'bytes_in_use': ..., 'bytes_held': ...}
    print(cuplug.memory.summary()) # a table per device and allocator
    cuplug.memory.reset_peak()     # peaks restart from what is in use now

An allocator written in Python is a backend like any plugin once registered::

    class Counting(cuplug.memory.Allocator):
        kind = "device"                      # 'device', 'managed', 'pinned_host' or 'host'

        def __init__(self, **options):       # the backend's options, as strings
            super().__init__()
            self.inner = cuplug.memory.create("device")

        def allocate(self, nbytes, stream):  # stream: the CUstream handle as an int
            return self.inner.allocate(nbytes, stream)

        def deallocate(self, ptr, nbytes, stream):
            self.inner.deallocate(ptr, nbytes, stream)

    cuplug.memory.register_allocator("counting", Counting)
    cuplug.use(allocator="counting")

The "logging" backend (``cuplug.use(allocator="logging", allocator_options={"upstream":
"pool", "path": "alloc.log"})``) writes one line per event; :func:`replay` runs such a log
against any allocator.
"""

from __future__ import annotations

import os
import re
import time
import warnings
from dataclasses import dataclass, field

from cuplug._driver import memory_table as _memory_table
from cuplug._public import public_dir as _public_dir

from . import _core

_allocators = _core.allocators

Allocator = _allocators.Allocator

__all__ = [
    "Allocator",
    "LogEvent",
    "backend",
    "create",
    "current",
    "free_held",
    "read_log",
    "register_allocator",
    "replay",
    "reset_peak",
    "stats",
    "summary",
]


def _option_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def register_allocator(name: str, cls: type | None = None, *, description: str = ""):
    """Registers an :class:`Allocator` subclass as allocator backend ``name``.

    Creating the backend calls ``cls(**options)`` with its configured options (strings); a
    TypeError or ValueError from the constructor is a ConfigError naming the backend. A later
    registration of the same name replaces the earlier one. Usable as a class decorator:
    ``@cuplug.memory.register_allocator("mine")``.

    Parameters
    ----------
    name : str
        The backend name to register.
    cls : type | None
        An Allocator subclass; None: returns a class decorator.
    description : str
        What ``python -m cuplug info`` shows for it.

    Returns
    -------
    type | collections.abc.Callable
        ``cls``, or the decorator.
    """
    if cls is None:

        def decorate(klass: type) -> type:
            _allocators.register_allocator(name, klass, description)
            return klass

        return decorate
    _allocators.register_allocator(name, cls, description)
    return cls


def create(name: str, **options) -> Allocator:
    """A new allocator of backend ``name`` (not the shared one): its configured options,
    overlaid with ``options``. Its ``stats()`` count only what is done through it.

    Parameters
    ----------
    name : str
        The backend name.
    **options
        Options overlaid on its configured ones (strings, numbers, booleans).

    Returns
    -------
    Allocator
        A new allocator.
    """
    return _allocators.create(name, {k: _option_text(v) for k, v in options.items()})


def backend(name: str) -> Allocator:
    """The shared allocator of backend ``name``, with its configured options: the object that
    selecting it would use.

    Parameters
    ----------
    name : str
        The backend name.

    Returns
    -------
    Allocator
        The shared allocator.
    """
    return _allocators.backend(name)


def current() -> Allocator:
    """The allocator every cuplug allocation uses now."""
    return _allocators.current()


def stats(allocator: Allocator | str | None = None) -> dict:
    """Statistics of an allocator (default: the current one) with its backend name:
    ``{'backend', 'kind', 'bytes_in_use', 'peak_bytes', 'bytes_held', 'allocations',
    'deallocations', 'failures'}``. bytes_in_use counts requested sizes; peak_bytes is the
    highest bytes_in_use since the allocator was made or :func:`reset_peak`; bytes_held is
    memory a pool caches for reuse. :func:`summary` shows them as a table.

    Parameters
    ----------
    allocator : Allocator | str | None
        An allocator or a backend name; None: the current one.

    Returns
    -------
    dict
        Byte counts (bytes_in_use, peak_bytes, bytes_held) and event counts, with ``backend``
        and ``kind``.
    """
    allocator = _resolve(allocator, "stats")
    result = {"backend": allocator.name, "kind": allocator.kind}
    result.update(allocator.stats())
    return result


def _resolve(allocator, who: str) -> Allocator:
    """``allocator`` as given to stats() and its kin: an Allocator, a backend name, or None for
    the current one."""
    if allocator is None:
        return current()
    if isinstance(allocator, str):
        return backend(allocator)
    if isinstance(allocator, Allocator):
        return allocator
    raise TypeError(
        f"memory.{who}: allocator must be an Allocator, a backend name or None, not "
        f"{type(allocator).__name__}"
    )


def _in_use() -> list[tuple[int | None, str, Allocator, bool]]:
    """(device, role, allocator, is_current) of every allocator object cuplug allocated from,
    per context, and the current allocator (device None) where it served no context yet.
    is_current: it is the current allocator, or its instance for another device."""
    rows = [tuple(entry) for entry in _allocators.instances()]
    if not any(is_now for *_, is_now in rows):
        rows.insert(0, (None, "selected", current(), True))
    return rows


def reset_peak(allocator: Allocator | str | None = None) -> None:
    """Restarts the peak (``peak_bytes`` of :func:`stats`) from the bytes in use now, as
    ``torch.cuda.reset_peak_memory_stats`` does; allocation counts keep counting.

    Parameters
    ----------
    allocator : Allocator | str | None
        An allocator or a backend name; None: every allocator :func:`summary` lists (each
        device's, the array pools, the current one).
    """
    if allocator is not None:
        _resolve(allocator, "reset_peak").reset_peak()
        return
    for _device, _role, a, _now in _in_use():
        a.reset_peak()


def summary(allocator: Allocator | str | None = None, *, device: int | None = None) -> str:
    """A table of the allocators' statistics, one line per device and allocator, for people
    (:func:`stats` is for programs); shorter than ``torch.cuda.memory_summary()``.

    Columns: the device, the allocator's backend (``*``: the current one, or its instance for
    that device), its role
    (``selected``: a backend selected now or earlier, or its instance for that device;
    ``array pool``: GPUArrays' default pool of a device; ``given``: the allocator asked about),
    in use (requested bytes of live allocations), peak (since creation or :func:`reset_peak`),
    cached (held for reuse), reserved (block sizes taken from upstream for a pool; in use +
    cached otherwise), blocks active/held (pools; ``-`` otherwise), and the counts of
    allocations, frees and failures.

    Parameters
    ----------
    allocator : Allocator | str | None
        One allocator or backend name to show; None: every allocator cuplug allocated from,
        and the current one.
    device : int | None
        Only the lines of this device (its ordinal); None: every device. Not with
        ``allocator``.

    Returns
    -------
    str
        The table, lines separated by newlines, without a newline at the end.
    """
    if device is not None and (isinstance(device, bool) or not isinstance(device, int)):
        raise TypeError(
            f"memory.summary: device must be an int or None, not {type(device).__name__}"
        )
    if device is not None and device < 0:
        raise ValueError(f"memory.summary: device must be >= 0, not {device}")
    if allocator is not None and device is not None:
        raise ValueError("memory.summary: pass an allocator or a device, not both")
    if allocator is not None:
        a = _resolve(allocator, "summary")
        rows = [_memory_table.row(None, "given", a, a is current())]
    else:
        rows = [
            _memory_table.row(*entry) for entry in _in_use() if device is None or entry[0] == device
        ]
    title = "cuplug memory summary" + ("" if device is None else f", device {device}")
    if not rows:
        return f"{title}\n(no allocator has served device {device})"
    return _memory_table.render(title, rows)


def free_held(allocator: Allocator | str | None = None) -> int:
    """Gives the memory an allocator (default: the current one) caches back; returns the bytes
    released, 0 for allocators that cache nothing.

    Parameters
    ----------
    allocator : Allocator | str | None
        An allocator or a backend name; None: the current one.

    Returns
    -------
    int
        Bytes released.
    """
    return _release_held(_resolve(allocator, "free_held"))


def _release_held(a: Allocator) -> int:
    # Not inline in free_held(): pybind11 takes a call from a function named like the method,
    # whose first argument is the object, for an override calling its base, and would then not
    # see a Python free_held() at all.
    return a.free_held() if a.can_free_held else 0


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
        allocator = current()
    elif isinstance(allocator, str):
        allocator = create(allocator)
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


__dir__ = _public_dir(__all__)
