"""cuplug: CUDA for Python with swappable backends, compatible with PyCUDA.

``import cuplug`` needs no GPU and no driver: the driver library is opened on the first GPU
call. Backends (allocator, compiler, launcher, rng, interop) are plugins chosen at run time::

    previous = cuplug.use(allocator="device")
    with cuplug.using(compiler="nvrtc"):
        ...
    print(cuplug.config)          # each choice and where it came from
    cuplug.plugins.diagnostics()  # every plugin file seen, and why any was refused

The public modules (``cuplug.driver``, ``cuplug.gpuarray``, ``cuplug.compiler``, ...) are
imported on first use, so ``import cuplug`` stays quick; ``cuplug.is_available()`` and
``cuplug.device_count()`` say whether there is a GPU to use, without raising.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

__version__ = "0.1.0"


def _split_version(text: str) -> tuple[tuple[int, ...], str]:
    """(release numbers, status) of a version string: "0.2.0rc1" -> ((0, 2, 0), "rc1")."""
    end = 0
    while end < len(text) and (text[end].isdigit() or text[end] == "."):
        end += 1
    release = tuple(int(part) for part in text[:end].split(".") if part)
    return release, text[end:].lstrip(".-_")


# PyCUDA's names for the version, for code written against it (VERSION holds the release numbers
# only, so a pre-release such as "0.2.0rc1" gives VERSION (0, 2, 0) and VERSION_STATUS "rc1").
VERSION, VERSION_STATUS = _split_version(__version__)
VERSION_TEXT = __version__

# Before the extension: the core's toolkit search order takes in NVIDIA's pip wheels of this
# Python (cuplug[cu13]) from the environment (cuplug._compile.toolkit).
from ._compile import toolkit as _toolkit  # noqa: E402
from ._public import public_dir as _public_dir  # noqa: E402

_toolkit.export_wheel_roots()

# CUPLUG_LOG's levels and stderr handler, before the extension logs anything (plugin discovery).
from . import _log  # noqa: E402

_log.configure()

# After the version, so that a failing import of the extension still leaves it readable.
from . import _core, config, plugins  # noqa: E402  (_core does not open the driver)

# The config file's layer. A broken file is an error here, naming the file and the key, rather
# than a silently ignored choice; CUPLUG_CONFIG= (empty) starts without one. `python -m cuplug
# info` (or the `cuplug` command) is where one looks for why: it starts without the file and
# reports the error.
try:
    config.load()
except config.ConfigError as _e:
    if not config._started_as_command():
        raise
    config._load_error = _e
    del _e

#: The backend kinds, each a keyword of use() and using(), in the order of the core's kinds table
#: (core/include/cuplug/plugin_kinds.hpp): a kind added there is a keyword here.
_KIND_ARGS: tuple[str, ...] = config.KINDS


_Function = TypeVar("_Function", bound=Callable[..., object])


def _with_kind_parameters(func: _Function) -> _Function:
    """Gives ``func(*names, **kwargs)`` the signature help() and IDEs show: one keyword per
    kind, then ``**plugin_options``. Type checkers keep func's own annotated signature (a
    decorator typed ``Callable -> Callable`` made use() and using() return Any to them)."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(k, kind, default=None, annotation="str | None") for k in _KIND_ARGS]
    params.append(
        inspect.Parameter("plugin_options", inspect.Parameter.VAR_KEYWORD, annotation="dict")
    )
    func.__signature__ = inspect.signature(func).replace(parameters=params)  # type: ignore[attr-defined]
    return func


def _split_arguments(
    where: str, names: tuple, kwargs: dict
) -> tuple[dict[str, object], dict[str, object]]:
    """({kind: name or None}, {other keyword: value}) of a use()/using() call; positional names
    are taken in the order of _KIND_ARGS."""
    if len(names) > len(_KIND_ARGS):
        raise TypeError(
            f"{where} takes at most {len(_KIND_ARGS)} backend names "
            f"({', '.join(_KIND_ARGS)}), got {len(names)}"
        )
    args = dict(zip(_KIND_ARGS, names))
    rest = {}
    for key, value in kwargs.items():
        if key not in _KIND_ARGS:
            rest[key] = value
        elif key in args:
            raise TypeError(f"{where} got multiple values for argument {key!r}")
        else:
            args[key] = value
    return args, rest


def _check_available(kind: str, name: object) -> None:
    if not isinstance(name, str):
        raise TypeError(f"cuplug.use(): {kind} must be a backend name (str), got {name!r}")
    _core.backends.info(kind, name)  # ConfigError listing what exists, and refused files


def _options_by_kind(plugin_options: dict) -> dict[str, dict]:
    by_kind = {}
    for key, values in plugin_options.items():
        kind = key[: -len("_options")] if key.endswith("_options") else None
        if kind not in config.KINDS:
            raise TypeError(
                f"cuplug.use() got an unexpected keyword argument {key!r}; backend options are "
                f"given as <kind>_options={{...}} with kind one of: {', '.join(config.KINDS)}"
            )
        if not hasattr(values, "items"):
            raise TypeError(f"cuplug.use(): {key} must be a mapping of option names to values")
        by_kind[kind] = dict(values)
    return by_kind


@_with_kind_parameters
def use(*names: str | None, **kinds_and_options: object) -> dict[str, str]:
    """Chooses backends for the whole process: ``use(allocator=..., compiler=..., launcher=...,
    rng=..., interop=...)``, one keyword per kind; kinds left as None keep their choice.

    Options go to the backend chosen in the same call, or the one selected for that kind:
    ``cuplug.use(allocator="limiting", allocator_options={"limit": "4GiB"})``. Unknown names and
    options the backend does not accept raise ConfigError listing what exists, and a backend
    that cannot be created raises its error (PluginError naming it and the cause); nothing
    changes then. Returns the previous selection of the kinds it chose, ``{kind: name}``, so that
    ``cuplug.use(**previous)`` puts it back (``cuplug.using()`` restores exactly, sources and
    options included).

    Parameters
    ----------
    allocator, compiler, launcher, rng, interop : str | None
        The backend name to select for each kind; None keeps the kind's choice.
    **plugin_options
        ``<kind>_options={name: value}``: options for the backend chosen for that kind (strings,
        numbers, booleans).

    Returns
    -------
    dict[str, str]
        The previous selection of the kinds chosen, ``{kind: name}``.
    """
    args, plugin_options = _split_arguments("cuplug.use()", names, kinds_and_options)
    choices = {kind: name for kind, name in args.items() if name is not None}
    options = _options_by_kind(plugin_options)
    for kind, name in choices.items():
        _check_available(kind, name)
    previous = {kind: config.selected(kind).name for kind in choices}
    state = config.snapshot()
    try:
        for kind, name in choices.items():
            _core.backends.set_explicit(kind, name)
        for kind, values in options.items():
            name = choices.get(kind) or config.selected(kind).name
            _check_available(kind, name)
            config.set_options(kind, name, values)
        for kind in {**choices, **options}:
            # Creating the backend now is what checks it and its options (a constructor that
            # raises, a factory that makes nothing); it is cached for use.
            try:
                _core.backends.create_backend(kind, config.selected(kind).name)
            except _core.Error as e:
                if e.code is None:
                    raise
                # A driver error: creation needs a device or context that is not there yet;
                # the backend is created, and checked, when it is first used.
    except BaseException:
        config.restore(state)
        raise
    return previous


@contextlib.contextmanager
@_with_kind_parameters  # functools.wraps copies the signature onto contextmanager's wrapper
def using(*names: str | None, **kinds_and_options: object) -> Iterator[None]:
    """``with cuplug.using(allocator="pool"):`` chooses backends for the block, then puts the
    explicit choices and options back exactly as they were. The choice is process-wide, not
    per thread.

    Parameters
    ----------
    allocator, compiler, launcher, rng, interop : str | None
        The backend name to select for each kind; None keeps the kind's choice.
    **plugin_options
        ``<kind>_options={name: value}``: options for the backend chosen for that kind (strings,
        numbers, booleans).
    """
    state = config.snapshot()
    use(*names, **kinds_and_options)
    try:
        yield
    finally:
        config.restore(state)


def device_count() -> int:
    """The number of CUDA devices this process can use; 0 when there is no driver library, the
    library is not a usable CUDA driver, or the driver finds no device. Never raises.

    The first call initialises the driver (``cuInit``), as ``cuplug.driver.init()`` does; it
    creates no context. ``cuplug.driver.init()`` raises the error that says why a device is
    missing, when the reason is wanted.

    Returns
    -------
    int
        ``cuplug.driver.Device.count()``, or 0 when it cannot be asked.
    """
    try:
        if not _core.backends.driver_available():
            return 0
        _core.init()
        return int(_core.Device.count())
    except Exception:  # noqa: BLE001 - "never raises": any failure means no usable device
        return 0


def is_available() -> bool:
    """Whether a CUDA device can be used: a driver library that loads and at least one device.
    False instead of an error when not. Never raises.

    Returns
    -------
    bool
        ``cuplug.device_count() > 0``.
    """
    return device_count() > 0


#: The public submodules that ``cuplug.<name>`` imports on first use (PEP 562), so that
#: ``import cuplug; cuplug.gpuarray.to_gpu(...)`` works as it does for numpy's submodules.
#: Left out: modules whose import does something (autoinit, autoprimaryctx and gl.autoinit
#: make a context, debug turns kernel debugging on); those are imported by name.
_LAZY_SUBMODULES: tuple[str, ...] = (
    "characterize",
    "compat",
    "compiler",
    "cumath",
    "curandom",
    "driver",
    "elementwise",
    "gl",
    "gpuarray",
    "memory",
    "profiler",
    "random",
    "reduction",
    "scan",
    "tools",
)


if TYPE_CHECKING:  # what __getattr__ gives, for type checkers
    from .fusion import fuse as fuse

#: Public functions of submodules that ``cuplug.<name>`` gives, importing them on first use.
_LAZY_FUNCTIONS: dict[str, str] = {"fuse": "fusion"}


def __getattr__(name: str) -> object:
    """``cuplug.gpuarray`` and the other public submodules, imported on first use. A submodule
    that cannot be imported here (``cuplug.gl`` without its interop backend) is an
    AttributeError carrying the ImportError's reason, so that hasattr() says False.
    ``cuplug.fuse`` is cuplug.fusion.fuse."""
    if name in _LAZY_FUNCTIONS:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY_FUNCTIONS[name]}"), name)
    if name not in _LAZY_SUBMODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ImportError as e:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}: {e}") from e


__all__ = [
    "VERSION",
    "VERSION_STATUS",
    "VERSION_TEXT",
    "__version__",
    "config",
    "device_count",
    "fuse",
    "is_available",
    "plugins",
    "use",
    "using",
]


def _loaded_submodules() -> list[str]:
    """The public submodules: those imported on first use, and any other imported so far."""
    return [
        *_LAZY_SUBMODULES,
        *(
            name
            for name, value in globals().items()
            if not name.startswith("_")
            and isinstance(value, type(_toolkit))
            and value.__name__ == f"{__name__}.{name}"
        ),
    ]


__dir__ = _public_dir(__all__, _loaded_submodules)
