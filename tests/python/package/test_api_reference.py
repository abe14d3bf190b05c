"""The API reference covers the API: every name a public module exports (its ``__all__``) is an
entry of the built documentation's inventory (``objects.inv``, what Sphinx indexes and what other
projects' intersphinx links resolve against), so a name added to the package without a reference
entry fails here. Reads the inventory tools/build_docs.sh wrote; .ci/run builds the docs before
the tests and sets CUPLUG_REQUIRE_DOCS=1, so there a missing inventory fails instead of skipping."""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path

import pytest

# Modules whose import does something (autoinit* make a context) are documented from their source
# (docs/api/context-modules.md) and export nothing; compat.pycuda is PyCUDA's names, documented as
# an alias (docs/api/compat.pycuda.md).
NOT_IMPORTED = {"autoinit", "autoinit_private", "autoprimaryctx", "compat"}


def _inventory_path() -> Path | None:
    explicit = os.environ.get("CUPLUG_DOCS_INVENTORY")
    if explicit:
        return Path(explicit)
    build = os.environ.get("CUPLUG_BUILD_DIR")
    candidate = Path(build) / "docs" / "html" / "objects.inv" if build else None
    return candidate if candidate is not None and candidate.is_file() else None


@pytest.fixture(scope="module")
def documented(pages) -> set[str]:
    return set(pages)


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    """``{name: the page (and anchor) documenting it}`` of every Python entry of the inventory."""
    path = _inventory_path()
    if path is None or not path.is_file():
        message = (
            f"no built API reference ({path or '$CUPLUG_BUILD_DIR/docs/html/objects.inv'}): "
            "run tools/build_docs.sh first"
        )
        if os.environ.get("CUPLUG_REQUIRE_DOCS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    inventory = pytest.importorskip("sphinx.util.inventory")
    with path.open("rb") as f:
        loaded = inventory.InventoryFile.load(f, "", lambda base, uri: uri)
    names: dict[str, str] = {}
    for kind, entries in loaded.items():
        if kind.startswith("py:"):
            for name, item in entries.items():
                names[name] = item.uri if hasattr(item, "uri") else item[2]
    return names


def _public_modules() -> list[str]:
    import cuplug

    found = ["cuplug"]
    for info in pkgutil.iter_modules(cuplug.__path__):
        if not info.name.startswith("_") and info.name not in NOT_IMPORTED:
            found.append(f"cuplug.{info.name}")
    return sorted(found)


def test_the_public_modules_are_the_documented_ones():
    # A new public module needs a page of its own; this list changes with the package.
    assert _public_modules() == [
        "cuplug",
        "cuplug.characterize",
        "cuplug.compiler",
        "cuplug.config",
        "cuplug.cumath",
        "cuplug.curandom",
        "cuplug.debug",
        "cuplug.driver",
        "cuplug.elementwise",
        "cuplug.fusion",
        "cuplug.gl",
        "cuplug.gpuarray",
        "cuplug.memory",
        "cuplug.plugins",
        "cuplug.profiler",
        "cuplug.random",
        "cuplug.reduction",
        "cuplug.scan",
        "cuplug.tools",
    ]
    pages = {p.stem for p in (Path(__file__).parents[3] / "docs" / "api").glob("*.md")}
    undocumented = [m for m in _public_modules() if m.removeprefix("cuplug.") not in pages]
    assert not undocumented, f"public modules without a page in docs/api/: {undocumented}"


@pytest.mark.parametrize("module", _public_modules())
def test_every_exported_name_is_in_the_reference(documented, module):
    try:
        mod = importlib.import_module(module)
    except ImportError as e:  # cuplug.gl without its interop plugin
        pytest.skip(f"{module} does not import here: {e}")
    exported = getattr(mod, "__all__", None)
    assert exported is not None, f"{module} has no __all__: what it exports is not decided"
    missing = [name for name in exported if f"{module}.{name}" not in documented]
    assert not missing, f"{module}: exported but not in the API reference: {missing}"


@pytest.mark.parametrize("module", _public_modules())
def test_every_exported_class_and_function_has_a_page_of_its_own(pages, module):
    """docs/_ext/api_pages.py: one page per name, as CuPy's and NumPy's references have (a module
    page lists them, each with its summary line)."""
    import inspect

    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        pytest.skip(f"{module} does not import here: {e}")
    wrong = {}
    for name in mod.__all__:
        obj = getattr(mod, name)
        if inspect.isclass(obj) or (callable(obj) and not inspect.ismodule(obj)):
            page = pages.get(f"{module}.{name}", "")
            if not page.startswith(f"api/generated/{module}.{name}.html"):
                wrong[name] = page
    assert not wrong, f"{module}: not on a page of their own: {wrong}"


def test_gpuarrays_page_has_its_members_from_every_mixin(pages):
    page = "api/generated/cuplug.gpuarray.GPUArray.html"
    for member in ("get", "set", "reshape", "astype", "sum", "shape", "dtype", "strides", "fill"):
        assert pages.get(f"cuplug.gpuarray.GPUArray.{member}", "").startswith(page), member
