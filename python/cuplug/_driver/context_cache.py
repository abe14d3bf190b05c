"""The one per-context cache: what cuplug makes in a context (loaded modules, compiled kernels,
reduction plans, rng generators, device tables) is kept here, keyed by the live context, and
dropped when that context is destroyed.

A context is named by ``Context._cache_key``: its handle and the serial number of its wrapper.
The driver often gives a new context the handle of a destroyed one; the serial tells them apart,
so nothing made in a dead context is handed out again. The C++ side calls :func:`drop` just
before a context is destroyed (``Context.detach()``, or its last user gone), while the context
is still valid and current: modules unload and cuRAND generators are destroyed in a live
context. (A cuRAND generator destroyed after its context left the CUDA runtime in an error state
that failed every later cuRAND call of the process: issue 24.) The C++ elementwise kernels and
the array pools are dropped on the same event, by listeners of their own (context.hpp).

Users: ``entries(ctx)`` is the context's dict; each user keys its entries with a tuple whose
first item names it (``("module", key)``, ``("reduction", ...)``), or stores one sub-dict under
its name. Imports only downward: the C++ extension.

No lock: :func:`drop` runs whenever a context is destroyed, and that can be inside any
allocation of any thread (a garbage collection that frees the last user of a context), also
while this module is in the middle of its own work. A lock held there would be taken again by
the same thread and never released (the process then hung at exit). Every step is one dict
operation, which the GIL makes atomic, and :func:`clear` swaps the table instead of walking it.
"""

from __future__ import annotations

import weakref

from cuplug import _core

__all__ = [
    "clear",
    "context_count",
    "current",
    "drop",
    "entries",
    "entry_count",
    "forget",
    "lookup",
    "per_object",
]

# (handle, serial) -> {user key: value}
_by_context: dict[tuple, dict] = {}
# (weak reference to the Context object last asked about, its dict): the common case, one
# context, costs an identity test instead of building its key. Weak, so that it keeps no
# context alive; reset by drop() and clear().
_last: tuple = (None, None)


def entries(ctx) -> dict:
    """The dict of what is cached for the live context `ctx` (a Context)."""
    global _last
    ref, found = _last
    if ref is not None and ctx is not None and ref() is ctx:
        return found
    try:
        key = ctx._cache_key
    except AttributeError:
        if ctx is None:
            raise _core.LogicError(
                "cuplug: there is no current context (import cuplug.autoinit, or make and push one)"
            ) from None
        raise
    found = _by_context.get(key)
    if found is None:
        found = _by_context.setdefault(key, {})
    _last = (weakref.ref(ctx), found)
    return found


def current():
    """(current Context, its dict); (None, None) when no context is current."""
    try:
        ctx = _core.Context.get_current(adopt=True)
    except _core.Error:
        return None, None  # no driver, or it failed to start
    if ctx is None:
        return None, None
    return ctx, entries(ctx)


def lookup(ctx, key, make):
    """The entry `key` of context `ctx`, made by ``make()`` on first use in it."""
    found = entries(ctx)
    try:
        return found[key]
    except KeyError:
        value = found[key] = make()
        return value


def per_object(ctx, name) -> weakref.WeakKeyDictionary:
    """A per-context map from objects (kernels, rng streams) to what they made in `ctx`, whose
    entries go with the object or with the context, whichever goes first."""
    found = entries(ctx)
    table = found.get(("weak", name))
    if table is None:
        table = found[("weak", name)] = weakref.WeakKeyDictionary()
    return table


def forget(name, obj) -> None:
    """Drops what `obj` keeps in its per_object(ctx, name) table of every context."""
    for found in list(_by_context.values()):
        table = found.get(("weak", name))
        if table is not None:
            table.pop(obj, None)


def drop(handle: int, serial: int) -> None:
    """Forgets everything cached for the context (handle, serial), releasing it now (called by
    the extension just before that context is destroyed)."""
    global _last
    found = _by_context.pop((handle, serial), None)
    _last = (None, None)
    if found:
        # Released here, in the context's last moments, not whenever the dict is collected.
        for value in list(found.values()):
            if isinstance(value, (dict, weakref.WeakKeyDictionary)):
                value.clear()
        found.clear()


def clear() -> None:
    """Forgets every context's entries, the C++ elementwise kernels and the array pools
    (cuplug.tools.clear_context_caches()), releasing the contexts they kept alive."""
    global _by_context, _last
    dropped, _by_context = _by_context, {}
    _last = (None, None)
    for found in dropped.values():
        found.clear()
    _core._array.clear_kernels()
    _core._array.release_pools()


def context_count() -> int:
    """Contexts with entries (tests: it must not grow as contexts come and go)."""
    return len(_by_context)


def entry_count() -> int:
    """Entries over every context (tests)."""
    return sum(len(found) for found in list(_by_context.values()))


_core._register_hooks(context_destroyed=drop)  # the extension calls it (python/src/hooks.hpp)
