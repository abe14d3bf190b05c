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

Who holds the memory: :func:`record_history` records the Python call site of every live block
(zero cost while off), :func:`snapshot` returns it, :func:`plot` draws memory over time::

    with cuplug.memory.recording() as rec:
        work()
    print(rec.snapshot)                     # live bytes per call site
    cuplug.memory.plot(rec.snapshot, "memory.png")
"""

from __future__ import annotations

from cuplug._driver import memory_history as _memory_history
from cuplug._driver import memory_table as _memory_table
from cuplug._driver.allocator_log import LogEvent, read_log, replay
from cuplug._driver.memory_history import (
    Block,
    CallSite,
    Frame,
    MemoryEvent,
    MemorySnapshot,
    Recording,
    is_recording,
    record_history,
    recording,
    snapshot,
)
from cuplug._driver.memory_plot import plot
from cuplug._public import public_dir as _public_dir

from . import _core

_allocators = _core.allocators

Allocator = _allocators.Allocator

__all__ = [
    "Allocator",
    "Block",
    "CallSite",
    "Frame",
    "LogEvent",
    "MemoryEvent",
    "MemorySnapshot",
    "Recording",
    "backend",
    "create",
    "current",
    "free_held",
    "is_recording",
    "plot",
    "read_log",
    "record_history",
    "recording",
    "register_allocator",
    "replay",
    "reset_peak",
    "snapshot",
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


def summary(
    allocator: Allocator | str | None = None, *, device: int | None = None, top_sites: int = 5
) -> str:
    """A table of the allocators' statistics, one line per device and allocator, for people
    (:func:`stats` is for programs); shorter than ``torch.cuda.memory_summary()``.

    Columns: the device, the allocator's backend (``*``: the current one, or its instance for
    that device), its role
    (``selected``: a backend selected now or earlier, or its instance for that device;
    ``array pool``: GPUArrays' default pool of a device; ``given``: the allocator asked about),
    in use (requested bytes of live allocations), peak (since creation or :func:`reset_peak`),
    cached (held for reuse), reserved (block sizes taken from upstream for a pool; in use +
    cached otherwise), blocks active/held (pools; ``-`` otherwise), and the counts of
    allocations, frees and failures. While :func:`record_history` records, a second part lists
    the ``top_sites`` call sites holding the most live bytes (of every allocator and device).

    Parameters
    ----------
    allocator : Allocator | str | None
        One allocator or backend name to show; None: every allocator cuplug allocated from,
        and the current one.
    device : int | None
        Only the lines of this device (its ordinal); None: every device. Not with
        ``allocator``.
    top_sites : int
        Call sites listed while the history is recorded; 0: none.

    Returns
    -------
    str
        The table, lines separated by newlines, without a newline at the end.
    """
    if isinstance(top_sites, bool) or not isinstance(top_sites, int):
        raise TypeError(f"memory.summary: top_sites must be an int, not {type(top_sites).__name__}")
    if top_sites < 0:
        raise ValueError(f"memory.summary: top_sites must be >= 0, not {top_sites}")
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
        text = f"{title}\n(no allocator has served device {device})"
    else:
        text = _memory_table.render(title, rows)
    if top_sites and is_recording():
        text += "\n\n" + _memory_history.top_call_sites_text(snapshot(), top_sites)
    return text


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


__dir__ = _public_dir(__all__)
