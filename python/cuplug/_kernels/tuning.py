"""Readers of the tuning variables (CUPLUG_ARRAY_TUNE, CUPLUG_SCAN_TUNE, CUPLUG_REDUCE_THREADS;
docs/environment.md). They are for experiments on a GPU, so a value they do not accept must not
break ``import cuplug.gpuarray``: it is named in a RuntimeWarning, with what the variable accepts,
and the built-in defaults are used instead (the whole variable is ignored, so that a measurement
never runs with half of the shape that was asked for)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping

#: A rule: (check, what it accepts in words).
Rule = tuple[Callable[[int], bool], str]


def between(low: int, high: int) -> Rule:
    return (lambda v: low <= v <= high, f"an integer from {low} to {high}")


def _ignored(name: str, value: str, problem: str, accepted: str) -> None:
    # repr(): the value is shown with its control characters escaped, never raw.
    warnings.warn(
        f"{name}={value!r} is ignored: {problem}; {name} accepts {accepted}. "
        "The built-in defaults are used.",
        RuntimeWarning,
        stacklevel=3,
    )


def _integer(text: str) -> int | None:
    text = text.strip()
    # int() alone would also take "1_000", " +4" or non-ASCII digits.
    if not text.isascii() or not (text.isdigit() or (text[:1] == "-" and text[1:].isdigit())):
        return None
    return int(text)


def integer(name: str, default: int, rule: Rule) -> int:
    """The integer in ``name``, or ``default`` when it is unset, empty or not accepted by
    ``rule`` (then with a warning)."""
    value = os.environ.get(name, "")
    if not value.strip():
        return default
    check, accepted = rule
    number = _integer(value)
    if number is None:
        _ignored(name, value, "not an integer", accepted)
        return default
    if not check(number):
        _ignored(name, value, f"{number} is out of range", accepted)
        return default
    return number


def key_values(name: str, rules: Mapping[str, Rule]) -> dict[str, int]:
    """``key=integer`` pairs separated by commas in ``name``, each key one of ``rules`` and its
    value accepted by its rule; {} when it is unset or anything in it is not accepted (then with
    a warning)."""
    value = os.environ.get(name, "")
    keys = ", ".join(f"{k} ({words})" for k, (_, words) in rules.items())
    accepted = f"comma-separated key=integer pairs of: {keys}"
    out: dict[str, int] = {}
    for item in value.split(","):
        if not item.strip():
            continue
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep:
            _ignored(name, value, f"{item.strip()!r} is not key=integer", accepted)
            return {}
        if key not in rules:
            _ignored(name, value, f"unknown key {key!r}", accepted)
            return {}
        check, words = rules[key]
        number = _integer(text)
        if number is None or not check(number):
            _ignored(name, value, f"{key} must be {words}, not {text.strip()!r}", accepted)
            return {}
        out[key] = number
    return out
