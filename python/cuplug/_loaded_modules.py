"""Modules loaded from compiled images: one per (context, cache key), so that a second
SourceModule of a source in the same context returns the module already loaded; and the lookup by
name expression that SourceModule and DynamicModule share."""

from __future__ import annotations

from cuplug import _core
from cuplug._driver import context_cache

LogicError = _core.LogicError


def current_context():
    try:
        return _core.Context.get_current()
    except _core.Error:
        return None  # no driver, or it failed to start: compiling may still work with an arch


def clear_module_cache():
    """Forgets the loaded modules kept per context (they unload when nothing else uses them),
    with everything else cached per context (cuplug._driver.context_cache)."""
    context_cache.clear()


def load_module(result, cached):
    ctx = current_context()
    if ctx is None:
        ctx = _core.Context.get_current()  # raises the driver's error when there is no driver
    if ctx is None:
        raise LogicError(
            "cuplug.compiler: cannot load a module: there is no current context "
            "(import cuplug.autoinit, or make and push one)"
        )
    if not cached:
        return _core.module_from_buffer(result.data)
    # One per (live context, cache key); it unloads with its context (context_cache).
    return context_cache.lookup(
        ctx, ("module", result.key), lambda: _core.module_from_buffer(result.data)
    )


def _looks_like_cpp_name(name):
    return any(c in name for c in "<>:(")


class NamedModule:
    """get_function / get_global that also accept the name expressions compiled for."""

    lowered_names: dict

    def get_function(self, name):
        lowered = self.lowered_names.get(name, name)
        try:
            return self.module.get_function(lowered)
        except LogicError as e:
            if lowered == name and _looks_like_cpp_name(name):
                raise LogicError(
                    f"{e} - {name!r} is a C++ name: pass name_expressions=[{name!r}] so the "
                    "compiler reports its mangled name"
                ) from None
            raise

    def get_global(self, name):
        lowered = self.lowered_names.get(name) or self.lowered_names.get("&" + name, name)
        return self.module.get_global(lowered)

    def get_texref(self, name):
        return self.module.get_texref(name)

    def get_surfref(self, name):
        return self.module.get_surfref(name)
