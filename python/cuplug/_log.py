"""CUPLUG_LOG: cuplug's logging on stderr without configuring Python's ``logging``
(docs/environment.md, "Logging").

cuplug logs to ``cuplug`` (general messages: clean-up warnings) and one child logger per
component: ``cuplug.compile`` (a compile's start and end, cache hits), ``cuplug.memory``,
``cuplug.plugins`` (plugin discovery, backend selection) and ``cuplug.launch``. The variable is a
comma-separated list of items, each either a level for all of cuplug or ``component=level``::

    CUPLUG_LOG=info                        # every component at info
    CUPLUG_LOG=compile=debug,memory=info   # these two only
    CUPLUG_LOG=warning,compile=debug       # all at warning, compile at debug

Levels: ``debug``, ``info``, ``warning``, ``error``, ``off``; case and spaces do not matter. When
the variable names at least one valid item, ``import cuplug`` sets those loggers' levels and adds
one stderr handler to ``cuplug`` (records still propagate, so an application's own handlers see
them too). An unknown level or component must not break ``import cuplug``: every bad item is named
in one RuntimeWarning, with what the variable accepts, and the others are applied."""

from __future__ import annotations

import logging
import os
import sys
import warnings

#: The component loggers, each ``cuplug.<name>``.
COMPONENTS: tuple[str, ...] = ("compile", "memory", "plugins", "launch")

#: The levels CUPLUG_LOG accepts; ``off`` is above every level cuplug logs at.
LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "off": logging.CRITICAL + 10,
}

VARIABLE = "CUPLUG_LOG"
ACCEPTED = (
    "a level for all of cuplug or component=level items, comma-separated (e.g. info, or "
    f"compile=debug,memory=info); levels: {', '.join(LEVELS)}; components: {', '.join(COMPONENTS)}"
)
FORMAT = "%(asctime)s %(name)s %(levelname)s: %(message)s"

#: The handler ``configure`` added, so that a second call replaces it rather than adding another.
_handler: logging.Handler | None = None


def parse(text: str) -> tuple[dict[str, int], list[str]]:
    """({logger name: level}, [problem, ...]) of a CUPLUG_LOG value. The logger names are
    ``cuplug`` (a bare level) and ``cuplug.<component>``; a later item for the same logger wins.
    Each problem names one item that was not understood; those items are left out."""
    levels: dict[str, int] = {}
    problems: list[str] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        component, sep, level = item.rpartition("=")
        component, level = component.strip().lower(), level.strip().lower()
        if sep and component not in COMPONENTS:
            problems.append(f"unknown component {component!r} in {item!r}")
            continue
        if level not in LEVELS:
            problems.append(f"unknown level {level!r} in {item!r}")
            continue
        levels[f"cuplug.{component}" if sep else "cuplug"] = LEVELS[level]
    return levels, problems


def configure(text: str | None = None, stream=None) -> dict[str, int]:
    """Applies CUPLUG_LOG (``text``, else the environment's): sets the loggers' levels and puts
    one stderr handler (``stream``) on ``cuplug``. Returns what was applied; an unset or empty
    variable changes nothing. Never raises for a bad value: it warns (RuntimeWarning)."""
    global _handler
    if text is None:
        text = os.environ.get(VARIABLE, "")
    levels, problems = parse(text)
    if problems:
        # repr(): the value is shown with its control characters escaped, never raw.
        warnings.warn(
            f"{VARIABLE}={text!r}: {'; '.join(problems)} (ignored); {VARIABLE} accepts {ACCEPTED}",
            RuntimeWarning,
            stacklevel=2,
        )
    if not levels:
        return levels
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    root = logging.getLogger("cuplug")
    if _handler is not None:
        root.removeHandler(_handler)
    _handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    _handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(_handler)
    return levels
