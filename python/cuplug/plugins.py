"""Plugins: what is loaded, what the loader saw and why it refused it, and loading more.

The core scans ``CUPLUG_PLUGIN_PATH`` (absolute folders or files) and the package's own
``plugins/`` folder on first use; ``load()`` and ``load_dir()`` add more. Every file the loader
looks at is kept with its outcome ("loaded", "rejected" and why, "duplicate" of which file), so
``diagnostics()`` and ``python -m cuplug info`` can say why a backend is missing.
"""

from __future__ import annotations

import os

from cuplug._public import public_dir as _public_dir

from . import _core
from . import config as _config

_backends = _core.backends

PluginInfo = _backends.PluginInfo
PluginCandidate = _backends.PluginCandidate
PluginError = _core.PluginError


def available(kind: str | None = None) -> list[PluginInfo]:
    """Loaded plugins, of one kind ("allocator", "compiler", ...) or all.

    Parameters
    ----------
    kind : str | None
        A backend kind ('allocator', 'compiler', ...); None: every kind.

    Returns
    -------
    list[PluginInfo]
        The loaded plugins.
    """
    return list(_backends.available(kind))


def names(kind: str) -> list[str]:
    """Names of the loaded plugins of a kind, sorted.

    Parameters
    ----------
    kind : str
        A backend kind: 'allocator', 'compiler', 'launcher', 'rng' or 'interop'.

    Returns
    -------
    list[str]
        Their backend names, sorted.
    """
    return list(_backends.names(kind))


def unavailable_reason(kind: str, name: str | None = None) -> str | None:
    """None when a backend of ``kind`` named ``name`` (default: the one selected for ``kind``)
    is loaded, else why not: the kinds' built-in defaults may name plugins this installation
    does not have (``rng = curand``, ``interop = gl``).

    Parameters
    ----------
    kind : str
        A backend kind: 'allocator', 'compiler', 'launcher', 'rng' or 'interop'.
    name : str | None
        A backend name; None: the one selected for ``kind``.

    Returns
    -------
    str | None
        None when it is loaded, else why not.
    """
    if name is None:
        return _config.selected(kind).reason
    return _backends.unavailable_reason(kind, name)


def diagnostics() -> list[PluginCandidate]:
    """Every candidate file seen so far and its outcome."""
    return list(_backends.diagnostics())


def package_dir() -> str:
    """The package's own plugin folder."""
    return _backends.package_plugin_dir()


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def load(path: str | os.PathLike) -> PluginInfo:
    """Loads one plugin file and returns what was loaded.

    Raises PluginError saying why when the file is refused (wrong ABI, unsafe permissions, no
    manifest, a plugin of that kind and name already loaded from another file, ...). Loading a
    file that is already loaded returns it again.

    Parameters
    ----------
    path : str | os.PathLike
        A plugin file (``lib*.so``).

    Returns
    -------
    PluginInfo
        The loaded plugin.
    """
    path = os.path.abspath(os.fspath(path))
    if os.path.isdir(path):
        raise PluginError(
            f"cannot load plugin {path}: it is a folder; use cuplug.plugins.load_dir()"
        )
    if not os.path.exists(path):
        raise PluginError(f"cannot load plugin {path}: no such file")
    outcomes = _backends.load(path)
    for candidate in outcomes:
        if candidate.state in ("loaded", "duplicate"):
            for plugin in available():
                if _same_file(plugin.path, path):
                    return plugin
        reason = candidate.reason or candidate.state
        raise PluginError(f"cannot load plugin {path}: {reason}")
    raise PluginError(f"cannot load plugin {path}: the loader did not consider it")


def load_dir(path: str | os.PathLike) -> list[PluginCandidate]:
    """Loads every ``lib*.so`` in a folder; returns each file's outcome (a refused file does not
    stop the others: look at ``.state`` and ``.reason``).

    Parameters
    ----------
    path : str | os.PathLike
        A folder of ``lib*.so`` plugin files.

    Returns
    -------
    list[PluginCandidate]
        Every file's outcome.
    """
    path = os.path.abspath(os.fspath(path))
    if not os.path.isdir(path):
        what = "not a folder" if os.path.exists(path) else "no such folder"
        raise PluginError(f"cannot load plugins from {path}: {what}")
    return list(_backends.load(path))


__all__ = [
    "PluginCandidate",
    "PluginError",
    "PluginInfo",
    "available",
    "diagnostics",
    "load",
    "load_dir",
    "names",
    "package_dir",
    "unavailable_reason",
]

__dir__ = _public_dir(__all__)
