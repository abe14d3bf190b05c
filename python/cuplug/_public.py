"""``__dir__`` for cuplug's public modules: dir() and tab completion show their ``__all__``."""

from __future__ import annotations

from collections.abc import Callable, Iterable


def public_dir(names: Iterable[str], extra: Callable[[], Iterable[str]] | None = None):
    """A module-level ``__dir__`` (PEP 562) listing ``names`` (the module's ``__all__``), plus
    what ``extra()`` gives at call time, instead of every helper and import of the module."""

    def __dir__() -> list[str]:
        return sorted({*names, *(extra() if extra else ())})

    return __dir__
