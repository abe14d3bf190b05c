"""Backend selection and where each choice comes from; reads the TOML config file.

Precedence, highest first: ``cuplug.use()`` > ``CUPLUG_<KIND>`` environment variables > the
config file > built-in defaults. The file is ``$CUPLUG_CONFIG`` when set (an absolute path; set it
empty to read no file), else ``$XDG_CONFIG_HOME/cuplug/cuplug.toml`` or
``~/.config/cuplug/cuplug.toml``. The current directory is never searched: a checked-out project
must not be able to pick the compiler or allocator of whoever runs Python in it.

This module is also the object ``cuplug.config``: ``cuplug.config.allocator`` is the allocator
choice with its source, ``print(cuplug.config)`` shows every kind.
"""

from __future__ import annotations

import errno
import os
import pwd
import sys
import types
from collections.abc import Mapping
from typing import NamedTuple

from cuplug._public import public_dir as _public_dir

from . import _core

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

_backends = _core.backends

#: The backend kinds, in the order they are shown.
KINDS: tuple[str, ...] = tuple(_backends.KINDS)

ConfigError = _core.ConfigError


class _ChoiceFields(NamedTuple):
    name: str
    #: "explicit", "environment", "config file" or "built-in default"
    source: str
    #: what set it: "cuplug.use()", the variable's name, the file's path, "built-in default"
    origin: str


class Choice(_ChoiceFields):
    """The backend chosen for a kind, and why: ``(name, source, origin)``. ``available`` says
    whether a plugin of that name is loaded, ``reason`` why not: a built-in default may name a
    plugin this installation does not have (``rng = curand``)."""

    #: The kind it is the choice for; None for a Choice made by hand.
    kind: str | None = None

    @property
    def reason(self) -> str | None:
        """None when the chosen backend is available, else why it is not ("unknown rng
        'curand'; available: none", plus any plugin file that provides it but was refused)."""
        if self.kind is None:
            return None
        return _backends.unavailable_reason(self.kind, self.name)

    @property
    def available(self) -> bool:
        """Whether a plugin (or built-in) of the chosen name is loaded for this kind."""
        return self.reason is None


# Options set through cuplug.use(), mirrored here so cuplug.using() can put back exactly what
# was there before (the core only answers the merged file + explicit view).
_explicit_options: dict[tuple[str, str], dict[str, str]] = {}


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ConfigError(f"unknown backend kind {kind!r}; kinds are: {', '.join(KINDS)}")
    return kind


def selected(kind: str) -> Choice:
    """The backend chosen for ``kind`` and the layer that chose it.

    Parameters
    ----------
    kind : str
        A backend kind: 'allocator', 'compiler', 'launcher', 'rng' or 'interop'.

    Returns
    -------
    Choice
        The backend's name, and the layer that chose it.
    """
    choice = Choice(*_backends.selected(_check_kind(kind)))
    choice.kind = kind
    return choice


def selection() -> dict[str, Choice]:
    """Every kind's choice."""
    return {kind: selected(kind) for kind in KINDS}


def options(kind: str, name: str | None = None) -> dict[str, str]:
    """Options a backend gets (file table overlaid with options given to ``cuplug.use()``);
    ``name`` defaults to the selected backend of ``kind``.

    Parameters
    ----------
    kind : str
        A backend kind: 'allocator', 'compiler', 'launcher', 'rng' or 'interop'.
    name : str | None
        A backend name; None: the one selected for ``kind``.

    Returns
    -------
    dict[str, str]
        The options, as strings.
    """
    if name is None:
        name = selected(kind).name
    return dict(_backends.plugin_options(_check_kind(kind), name))


def option_string(key: str, value: object) -> str:
    """Plugin options are strings in the core; numbers and booleans are written as TOML does.

    Parameters
    ----------
    key : str
        The option's name (for the error message).
    value : str | int | float | bool
        Its value.

    Returns
    -------
    str
        The value as the core stores it.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise ConfigError(
        f"option {key!r}: {type(value).__name__} values are not supported; "
        "give a string, a number or a boolean"
    )


def set_options(kind: str, name: str, values: Mapping[str, object]) -> None:
    """Replaces the options set from Python for plugin ``kind.name`` (``{}`` clears them).

    Parameters
    ----------
    kind : str
        A backend kind: 'allocator', 'compiler', 'launcher', 'rng' or 'interop'.
    name : str
        The backend's name.
    values : Mapping[str, object]
        Option names and values (strings, numbers, booleans).
    """
    converted = {str(k): option_string(f"{kind}.{name}.{k}", v) for k, v in values.items()}
    _backends.set_explicit_options(_check_kind(kind), name, converted)
    if converted:
        _explicit_options[(kind, name)] = converted
    else:
        _explicit_options.pop((kind, name), None)


def snapshot() -> tuple[dict[str, str | None], dict[tuple[str, str], dict[str, str]]]:
    """The explicit layer (choices and options), for restore()."""
    choices = {kind: _backends.explicit_choice(kind) for kind in KINDS}
    return choices, {key: dict(values) for key, values in _explicit_options.items()}


def restore(state: tuple[dict[str, str | None], dict[tuple[str, str], dict[str, str]]]) -> None:
    """Puts back an explicit layer taken with snapshot().

    Parameters
    ----------
    state : tuple
        What snapshot() returned.
    """
    choices, saved_options = state
    for kind, name in choices.items():
        _backends.set_explicit(kind, name)
    for kind, name in set(_explicit_options) | set(saved_options):
        set_options(kind, name, saved_options.get((kind, name), {}))


def reset() -> None:
    """Forgets every choice and option made with ``cuplug.use()``."""
    restore(({kind: None for kind in KINDS}, {}))


# --- the config file ------------------------------------------------------------------------


def _home() -> str:
    """$HOME when absolute, else the account's home folder: a relative HOME (``HOME=.``) would
    make cuplug read a config file from the current directory."""
    home = os.environ.get("HOME", "")
    if os.path.isabs(home):
        return home
    try:
        home = pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:
        return ""
    return home if os.path.isabs(home) else ""


def user_config_path() -> str | None:
    """Where the user's config file is looked for when CUPLUG_CONFIG is not set; None when
    there is no absolute place to look (relative XDG_CONFIG_HOME and HOME are not used)."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        home = _home()
        if not home:
            return None
        base = os.path.join(home, ".config")
    return os.path.join(base, "cuplug", "cuplug.toml")


def _printable(text: str) -> str:
    """``text`` for a message, its control characters escaped as repr() writes them (``\\n``,
    ``\\x1b``): a value from the environment never reaches a terminal or a log raw."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def _exists(path: str, who: str) -> bool:
    """Whether the file ``path`` exists (a dangling link does not); ConfigError when it cannot
    exist because its links go round in a loop (ELOOP), which os.path.exists() would call
    missing."""
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ConfigError(
                f"{who} {_printable(path)} is a symbolic link loop ({e.strerror}): "
                "point it at a config file, or remove the link"
            ) from None
        return False
    return True


def config_path() -> str | None:
    """The config file to read, or None. Raises ConfigError when CUPLUG_CONFIG is unusable, or
    when the config file is a symbolic link loop."""
    if "CUPLUG_CONFIG" in os.environ:
        path = os.environ["CUPLUG_CONFIG"]
        if not path:
            return None
        if not os.path.isabs(path):
            raise ConfigError(
                f"CUPLUG_CONFIG={path!r} is not an absolute path; cuplug never reads "
                "configuration relative to the current directory"
            )
        if not _exists(path, "CUPLUG_CONFIG names"):
            raise ConfigError(f"CUPLUG_CONFIG names {_printable(path)}, which does not exist")
        return path
    path = user_config_path()
    return path if path is not None and _exists(path, "the config file") else None


#: Config files are read whole; anything larger is refused rather than read into memory.
_MAX_FILE_BYTES = 1 << 20


def _table_error(path: str, where: str, problem: str) -> ConfigError:
    return ConfigError(f"config file {path}: {where}: {problem}")


def parse_file(path: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Reads a config file: ({kind: backend}, {"kind.name": {option: value}}).

    Raises ConfigError naming the file and the offending key, and for a file that is not
    trusted (someone but root and you could change it: see docs/security.md), not UTF-8, not
    TOML, nested too deeply or larger than _MAX_FILE_BYTES.

    Parameters
    ----------
    path : str
        The TOML file.

    Returns
    -------
    tuple[dict[str, str], dict[str, dict[str, str]]]
        The backend choices by kind, and the options by "kind.name".
    """
    # The core checks who could change the file and opens it; we read what it checked.
    fd = _backends.open_config_file(path)
    try:
        with os.fdopen(fd, "rb") as f:
            raw = f.read(_MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"config file {path}: cannot read it: {e.strerror}") from None
    if len(raw) > _MAX_FILE_BYTES:
        raise ConfigError(
            f"config file {path}: larger than {_MAX_FILE_BYTES} bytes; "
            "a cuplug config file is a few lines of TOML"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"config file {path}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset "
            f"{e.start}); TOML files are UTF-8"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {path}: not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(
            f"config file {path}: values nested too deeply to read; "
            "a cuplug config file holds flat tables of options"
        ) from None

    backends: dict[str, str] = {}
    plugin_options: dict[str, dict[str, str]] = {}
    kinds = ", ".join(KINDS)
    for key, value in data.items():
        if key == "backends":
            if not isinstance(value, dict):
                raise _table_error(path, "backends", "must be a table: [backends]")
            for kind, name in value.items():
                if kind not in KINDS:
                    raise _table_error(
                        path, f"[backends] {kind}", f"unknown backend kind; kinds are: {kinds}"
                    )
                if not isinstance(name, str) or not name.strip():
                    raise _table_error(
                        path, f"[backends] {kind}", f"expected a backend name string, got {name!r}"
                    )
                backends[kind] = name.strip()
        elif key in KINDS:
            if not isinstance(value, dict):
                raise _table_error(
                    path,
                    key,
                    f"'{key} = ...' at the top level is not a choice; choose with "
                    f'[backends] {key} = "<name>", give options in [{key}.<name>] tables',
                )
            for name, table in value.items():
                if not isinstance(table, dict):
                    raise _table_error(
                        path, f"{key}.{name}", f"must be a table of options: [{key}.{name}]"
                    )
                try:
                    plugin_options[f"{key}.{name}"] = {
                        opt: option_string(opt, v) for opt, v in table.items()
                    }
                except ConfigError as e:
                    raise _table_error(path, f"[{key}.{name}]", str(e)) from None
        else:
            raise _table_error(
                path,
                key,
                f"unknown table; expected [backends] or [<kind>.<name>] with kind one of: {kinds}",
            )
    return backends, plugin_options


#: The error of the config file read at import, when `python -m cuplug` started without it.
_load_error: ConfigError | None = None


def _started_as_command() -> bool:
    """Whether this process is ``python -m cuplug ...`` (or ``-m cuplug.__main__``) or the
    ``cuplug`` command a pip install provides (a script of that name), as the interpreter's own
    arguments say."""
    args = list(getattr(sys, "orig_argv", ()))[1:]
    takes_value = {"-W", "-X", "--check-hash-based-pycs"}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-m":
            return args[i + 1 : i + 2] in (["cuplug"], ["cuplug.__main__"])
        if arg.startswith("-m"):
            return arg in ("-mcuplug", "-mcuplug.__main__")
        if arg in ("-c", "-") or arg.startswith("-c"):
            return False
        if not arg.startswith("-"):  # a script
            return os.path.basename(arg) == "cuplug"
        i += 2 if arg in takes_value else 1
    return False


def load(path: str | None = None) -> str | None:
    """Reads the config file (``path``, or the one config_path() names) into the core's file
    layer, replacing what was there; returns the path read, or None when there is no file.

    Parameters
    ----------
    path : str | None
        A TOML file; None: the one config_path() names (``CUPLUG_CONFIG``, then the user's
        file).

    Returns
    -------
    str | None
        The path read, or None when there is no file.
    """
    if path is None:
        path = config_path()
    if path is None:
        _backends.clear_file_layer()
        return None
    backends, plugin_options = parse_file(path)
    _backends.set_file_layer(path, backends, plugin_options)
    return path


def file() -> str | None:
    """Path of the config file in use, or None."""
    return _backends.file_path() or None


# --- the module as an object ----------------------------------------------------------------


def describe() -> str:
    """A table of every kind's choice and its source; a choice that names no loaded plugin is
    marked unavailable, with the reason."""
    lines = []
    for kind, choice in selection().items():
        where = (
            choice.source
            if choice.origin in ("", choice.source)
            else (f"{choice.source}: {choice.origin}")
        )
        lines.append(f"{kind:<10} {_printable(choice.name):<10} ({_printable(where)})")
        reason = choice.reason
        if reason is not None:
            lines[-1] += f"  [unavailable: {reason}]"
    path = file()
    lines.append(f"config file: {_printable(path) if path else 'none'}")
    return "\n".join(lines)


class _ConfigModule(types.ModuleType):
    """Lets ``cuplug.config.allocator`` and ``cuplug.config["allocator"]`` read the choice."""

    def __getattr__(self, name: str) -> Choice:
        if name in KINDS:
            return selected(name)
        raise AttributeError(f"module 'cuplug.config' has no attribute {name!r}")

    def __getitem__(self, kind: str) -> Choice:
        return selected(kind)

    def __iter__(self):
        return iter(KINDS)

    def __repr__(self) -> str:
        return describe()


__all__ = [
    "KINDS",
    "Choice",
    "ConfigError",
    "config_path",
    "describe",
    "file",
    "load",
    "option_string",
    "options",
    "parse_file",
    "reset",
    "restore",
    "selected",
    "selection",
    "set_options",
    "snapshot",
    "user_config_path",
]
# The kinds read as attributes (cuplug.config.allocator) are public too.
__dir__ = _public_dir(__all__, lambda: KINDS)

sys.modules[__name__].__class__ = _ConfigModule
