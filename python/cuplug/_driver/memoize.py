"""PyCUDA's context-dependent memoization (``tools.context_dependent_memoize``) on cuplug's one
per-context cache, and ``clear_context_caches()``, which empties both.

Here, below the facades, because private code memoizes kernels per context (the elementwise
factories) and cuplug.autoinit clears the caches at exit; cuplug.tools re-exports the names."""

from __future__ import annotations

import functools

from cuplug import _core
from cuplug._driver import context_cache

__all__ = [
    "clear_context_caches",
    "context_dependent_memoize",
    "context_dependent_memoized_functions",
]

#: The functions that have cached a result (PyCUDA's list; clear_context_caches() walks it).
context_dependent_memoized_functions = []

_MEMOIZED = "context_dependent_memoize"


class _MemoizedResults:
    """What ``func._pycuda_ctx_dep_memoize_dic`` is (PyCUDA's attribute, which its
    clear_context_caches() clears): the function's results live in cuplug's per-context cache,
    one table per live context, and clear() forgets them in every context."""

    def __init__(self, func):
        self._func = func

    def clear(self):
        context_cache.forget(_MEMOIZED, self._func)


def context_dependent_memoize(func):
    """Caches func's results per current context and per arguments (kwargs included). The
    results of a context go with it (cuplug's per-context cache drops them just before the
    context is destroyed), and a new context that gets a destroyed one's handle starts afresh.

    Parameters
    ----------
    func : collections.abc.Callable
        The function to cache.

    Returns
    -------
    collections.abc.Callable
        The caching wrapper.
    """
    func._pycuda_ctx_dep_memoize_dic = _MemoizedResults(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        cache_key = (args, frozenset(kwargs.items())) if kwargs else (args,)
        tables = context_cache.per_object(_core.Context.get_current(adopt=True), _MEMOIZED)
        results = tables.get(func)
        if results is None:
            results = tables[func] = {}
        try:
            return results[cache_key]
        except KeyError:
            context_dependent_memoized_functions.append(func)
            result = results[cache_key] = func(*args, **kwargs)
            return result

    return wrapper


def clear_context_caches():
    """Empties every context_dependent_memoize cache and cuplug's per-context cache (loaded
    modules, compiled kernels, array pools, rng generators), dropping the contexts and modules
    they keep alive."""
    for func in context_dependent_memoized_functions:
        try:
            func._pycuda_ctx_dep_memoize_dic.clear()
        except AttributeError:
            pass
    context_cache.clear()
