"""Arrays and copies across devices: the context for a device, peer access enabled once per pair
of contexts, and copies that stage through the host where two GPUs cannot reach each other."""

from __future__ import annotations

import threading

from cuplug import _core
from cuplug._driver import context_cache

__all__ = ["as_context", "memcpy_peer", "memcpy_peer_async", "peer_access"]

_lock = threading.Lock()
# Device ordinal -> its primary context, retained once so that the pools made there persist.
_primary: dict[int, _core.Context] = {}


def as_context(where) -> _core.Context:
    """The context for `where`: a Context as is; a Device or an ordinal gives the current context
    when it is on that device, else the device's primary context (retained once and kept)."""
    if isinstance(where, _core.Context):
        return where
    if isinstance(where, _core.Device):
        ordinal = where.ordinal
    elif isinstance(where, int) and not isinstance(where, bool):
        ordinal = where
        if not 0 <= ordinal < _core.Device.count():
            raise ValueError(
                f"device {ordinal} does not exist: this machine has {_core.Device.count()} "
                "device(s)"
            )
    else:
        raise TypeError(
            f"expected a Device, a device ordinal or a Context, got {type(where).__name__}"
        )
    current = _core.Context.get_current(adopt=True)
    if current is not None and current.device.ordinal == ordinal:
        return current
    with _lock:
        ctx = _primary.get(ordinal)
        if ctx is None:
            ctx = _primary[ordinal] = _core.Device(ordinal).retain_primary_context()
    return ctx


def peer_access(dest: _core.Context, src: _core.Context) -> bool:
    """Whether kernels and copies of `dest` reach `src`'s memory directly (and back). The first
    call for a pair asks Device.can_access_peer and enables access both ways; later calls are a
    dictionary look-up. Same context or same device: True."""
    if dest.handle == src.handle or dest.device == src.device:
        return True
    # Kept in each context's entries of the per-context cache: gone with either context, and
    # never found by a new context that gets a destroyed one's handle.
    mine = context_cache.entries(dest)
    key = ("peer access", src._cache_key)
    state = mine.get(key)
    if state is not None:
        return state
    with _lock:
        state = mine.get(key)
        if state is None:
            state = dest.device.can_access_peer(src.device) and src.device.can_access_peer(
                dest.device
            )
            if state:
                _enable(dest, src)
                _enable(src, dest)
            mine[key] = context_cache.entries(src)[("peer access", dest._cache_key)] = state
    return state


def _enable(ctx: _core.Context, peer: _core.Context) -> None:
    with ctx:
        try:
            _core.Context.enable_peer_access(peer)
        except _core.Error as e:
            # Someone (another library, an earlier cuplug) enabled it already: what we want.
            if "already enabled" not in str(e):
                raise


def _reach(dest_context, src_context) -> None:
    """Enables peer access between the copy's two contexts (None: the current one) once, where
    the GPUs have it. Arguments that are not Contexts are left to the copy, whose TypeError
    names them."""
    current = None
    if dest_context is None or src_context is None:
        current = _core.Context.get_current(adopt=True)
    dc = current if dest_context is None else dest_context
    sc = current if src_context is None else src_context
    if isinstance(dc, _core.Context) and isinstance(sc, _core.Context):
        peer_access(dc, sc)


def memcpy_peer(dest, src, size, dest_context=None, src_context=None):
    """Copies `size` bytes from `src` (memory of `src_context`) to `dest` (of `dest_context`); a
    context left as None is the current one. Peer access between the two is enabled on first use
    where the GPUs have it; where they do not, the driver stages the copy through the host.

    Parameters
    ----------
    dest : DeviceAllocation | int
        Destination device address, in `dest_context`.
    src : DeviceAllocation | int
        Source device address, in `src_context`.
    size : int
        Bytes to copy.
    dest_context : Context | None
        The destination's context; None: the current one.
    src_context : Context | None
        The source's context; None: the current one.
    """
    _reach(dest_context, src_context)
    _core.memcpy_peer(dest, src, size, dest_context, src_context)


def memcpy_peer_async(dest, src, size, dest_context=None, src_context=None, stream=None):
    """memcpy_peer ordered on `stream` (returns before the copy is done).

    Parameters
    ----------
    dest : DeviceAllocation | int
        Destination device address, in `dest_context`.
    src : DeviceAllocation | int
        Source device address, in `src_context`.
    size : int
        Bytes to copy.
    dest_context : Context | None
        The destination's context; None: the current one.
    src_context : Context | None
        The source's context; None: the current one.
    stream : Stream | None
        The stream the copy is ordered on; None: the legacy default stream.
    """
    _reach(dest_context, src_context)
    _core.memcpy_peer_async(dest, src, size, dest_context, src_context, stream)
