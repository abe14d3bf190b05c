"""Helpers of cuplug's public modules: ``__dir__`` (dir() and tab completion show their ``__all__``)
and the forwarding of PyCUDA's module-global settings to the private module that holds them."""

from __future__ import annotations

from collections.abc import Callable, Iterable


def public_dir(names: Iterable[str], extra: Callable[[], Iterable[str]] | None = None):
    """A module-level ``__dir__`` (PEP 562) listing ``names`` (the module's ``__all__``), plus
    what ``extra()`` gives at call time, instead of every helper and import of the module."""

    def __dir__() -> list[str]:
        return sorted({*names, *(extra() if extra else ())})

    return __dir__


def forward_settings(module_name: str, target: object, names: Iterable[str]) -> None:
    """Makes each of ``names`` on the module ``module_name`` read and write ``target.<name>``.

    For PyCUDA's settings that are globals of a public module (``compiler.DEFAULT_NVCC_FLAGS``,
    ``driver.CUDA_DEBUGGING``) while the private code that honours them must not import that
    module: the value lives in ``target`` (a private module), and ``module.NAME = value``, as
    PyCUDA code writes it, sets it there. The module must not define the names itself."""
    import sys

    module = sys.modules[module_name]

    def forwarded(name):
        return property(
            lambda self: getattr(target, name),
            lambda self, value: setattr(target, name, value),
            doc=f"{module_name}.{name}, kept in {getattr(target, '__name__', target)}",
        )

    namespace = {name: forwarded(name) for name in names}
    module.__class__ = type(type(module).__name__, (type(module),), namespace)
