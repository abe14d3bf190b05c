"""Modules loaded from compiled images, one per SourceModule (as PyCUDA loads them: each module has
its own ``__constant__`` and ``__device__`` variables, so two SourceModules of one source do not
share them; the compiled image itself comes from the compile cache); and the lookup by name
expression that SourceModule and DynamicModule share."""

from __future__ import annotations

import warnings

from cuplug import _core
from cuplug._driver import context_cache  # clear_module_cache

LogicError = _core.LogicError


def current_context():
    try:
        return _core.Context.get_current(adopt=True)
    except _core.Error:
        return None  # no driver, or it failed to start: compiling may still work with an arch


def clear_module_cache():
    """Forgets what the engines keep per context (their loaded kernels unload when nothing else
    uses them): cuplug._driver.context_cache, as PyCUDA-era code calls it by this name."""
    context_cache.clear()


def load_module(result):
    """A new module of ``result``'s image in the current context. Never shared between
    SourceModules: reikna's test_constant_memory sets different ``__constant__`` arrays in two
    programs of one source and runs both, which only works with a module each (PyCUDA's way)."""
    ctx = current_context()
    if ctx is None:
        ctx = _core.Context.get_current(
            adopt=True
        )  # raises the driver's error when there is no driver
    if ctx is None:
        raise LogicError(
            "cuplug.compiler: cannot load a module: there is no current context "
            "(import cuplug.autoinit, or make and push one)"
        )
    return _core.module_from_buffer(result.data)


def _looks_like_cpp_name(name):
    return any(c in name for c in "<>:(")


class CudaModule:
    """PyCUDA's base class of SourceModule and DynamicModule: a loaded ``self.module``, with
    the helpers PyCUDA's subclasses reuse (``_check_arch``, ``_bind_module``)."""

    module: _core.Module

    def _check_arch(self, arch):
        """Warns when ``arch`` ("sm_90") is above the current device's compute capability."""
        if arch is None:
            return
        try:
            capability = _core.Context.get_device().compute_capability()
            if tuple(map(int, tuple(arch.split("_")[1]))) > capability:
                warnings.warn(
                    "trying to compile for a compute capability higher than selected GPU",
                    stacklevel=2,
                )
        except Exception as e:  # noqa: BLE001 - PyCUDA warns whatever went wrong
            warnings.warn(f"failed to check compute capability for module: {e!s}", stacklevel=1)

    def _bind_module(self):
        """Binds the module's get_global / get_texref / get_surfref as attributes."""
        self.get_global = self.module.get_global
        self.get_texref = self.module.get_texref
        if hasattr(self.module, "get_surfref"):
            self.get_surfref = self.module.get_surfref

    def get_function(self, name):
        """The kernel ``name`` of the module.

        Parameters
        ----------
        name : str
            The kernel's (extern "C" or mangled) name.

        Returns
        -------
        Function
            The kernel.
        """
        return self.module.get_function(name)


class NamedModule(CudaModule):
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
