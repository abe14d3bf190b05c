"""The meta-path finder behind cuplug.compat.pycuda: ``pycuda`` and ``pycuda.<name>`` answered
with cuplug's module objects. Its own module, so that the package's .pth file (CUPLUG_PYCUDA=1)
can install it without importing cuplug.compat.pycuda, which ``python -m cuplug.compat.pycuda``
then runs as ``__main__`` without runpy's warning about a module imported before it ran."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType

# PyCUDA module names whose cuplug counterpart has another name.
_RENAMED = {"pycuda._driver": "cuplug.driver"}


def target_name(fullname: str) -> str:
    """The cuplug module that stands for a pycuda module name."""
    return _RENAMED.get(fullname, "cuplug" + fullname[len("pycuda") :])


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system an already imported cuplug module."""

    def __init__(self, target: str):
        self.target = target
        self._target_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self._target_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just set module.__spec__ to the alias spec; the module is
        # still cuplug's (importlib.reload, pickle and tracebacks read __spec__).
        module.__spec__ = self._target_spec

    def get_code(self, fullname):
        # What runpy runs for `python -m pycuda.<name>` (pycuda.debug): cuplug's module code.
        spec = importlib.util.find_spec(self.target)
        return spec.loader.get_code(self.target)


class PycudaAliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``pycuda`` and ``pycuda.*`` as cuplug modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "pycuda" and not fullname.startswith("pycuda."):
            return None
        name = target_name(fullname)
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            found = None
        if found is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: cuplug has no {name!r} "
                "(cuplug.compat.pycuda maps pycuda.<name> to cuplug.<name>)",
                name=fullname,
            )
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(name), is_package=found.submodule_search_locations is not None
        )


_finder = PycudaAliasFinder()


def _pycuda_modules() -> list[str]:
    return [n for n in sys.modules if n == "pycuda" or n.startswith("pycuda.")]


def install() -> None:
    """Puts the alias first on sys.meta_path (again a no-op when it is there)."""
    if _finder in sys.meta_path:
        return
    real = [n for n in _pycuda_modules() if not sys.modules[n].__name__.startswith("cuplug")]
    if real:
        origin = getattr(sys.modules[real[0]], "__file__", None) or "?"
        raise ImportError(
            f"pycuda is already imported ({real[0]} from {origin}); import cuplug.compat.pycuda "
            "before anything imports pycuda, so that every pycuda module is cuplug's"
        )
    sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    """Removes the alias and forgets the pycuda names it gave out."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in _pycuda_modules():
        if sys.modules[name].__name__.startswith("cuplug"):
            del sys.modules[name]


def installed() -> bool:
    return _finder in sys.meta_path
