"""cuplug: CUDA for Python with swappable backends, compatible with PyCUDA.

``import cuplug`` needs no GPU and no driver: the driver library is opened on the first GPU
call. Backends (allocator, compiler, launcher, rng, interop) are plugins chosen at run time::

    previous = cuplug.use(allocator="device")
    with cuplug.using(compiler="nvrtc"):
        ...
    print(cuplug.config)          # each choice and where it came from
    cuplug.plugins.diagnostics()  # every plugin file seen, and why any was refused
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator

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


def _with_kind_parameters(func: Callable) -> Callable:
    """Gives ``func(*names, **kwargs)`` the signature help() and IDEs show: one keyword per
    kind, then ``**plugin_options``."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(k, kind, default=None, annotation="str | None") for k in _KIND_ARGS]
    params.append(
        inspect.Parameter("plugin_options", inspect.Parameter.VAR_KEYWORD, annotation="dict")
    )
    func.__signature__ = inspect.signature(func).replace(parameters=params)
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


__all__ = [
    "VERSION",
    "VERSION_STATUS",
    "VERSION_TEXT",
    "__version__",
    "config",
    "plugins",
    "use",
    "using",
]


def _loaded_submodules() -> list[str]:
    """The public submodules imported so far (cuplug.driver, cuplug.gpuarray, ...)."""
    return [
        name
        for name, value in globals().items()
        if not name.startswith("_")
        and isinstance(value, type(_toolkit))
        and value.__name__ == f"{__name__}.{name}"
    ]


__dir__ = _public_dir(__all__, _loaded_submodules)
