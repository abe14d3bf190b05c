"""The rng wing (cuplug._rng) imports only downward: the extension, the driver and array wings and
the layers below them, never a public module (issue 25). Read from the sources, late imports
inside functions included; no device needed."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[3] / "python" / "cuplug"
WING = PACKAGE / "_rng"

# What the wing may import: itself and the layers under it (docs/architecture.md).
BELOW = ("_rng", "_array", "_kernels", "_compile", "_codegen", "_driver", "_core")
BOTTOM = ("_dtypes", "_public")
# Public modules the wing still imports because what it needs has not left them yet, and where
# it goes: empty this as the moves land (the test fails while a listed import is gone, so that
# the list cannot outlive them).
NOT_YET_MOVED: dict[str, str] = {}


def _imports(path: pathlib.Path) -> set[str]:
    """Every cuplug module `path` imports, anywhere in it (also inside functions)."""
    package = "cuplug._rng"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            if _is_package(base):  # `from cuplug import _core`: the names are modules
                found |= {f"{base}.{a.name}" for a in node.names}
            else:
                found.add(base)
    return {name for name in found if name == "cuplug" or name.startswith("cuplug.")}


def _is_package(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "cuplug" and PACKAGE.joinpath(*parts[1:]).is_dir()


def _allowed(name: str) -> bool:
    parts = name.split(".")
    return len(parts) >= 2 and (parts[1] in BELOW or (len(parts) == 2 and parts[1] in BOTTOM))


def test_the_rng_wing_imports_no_public_module():
    wrong, used = {}, set()
    for path in sorted(WING.glob("*.py")):
        for name in _imports(path):
            if name in NOT_YET_MOVED:
                used.add(name)
            elif not _allowed(name):
                wrong.setdefault(path.name, []).append(name)
    assert wrong == {}, "cuplug._rng imports upward (a facade or an unlisted layer)"
    assert used == set(NOT_YET_MOVED), "moved meanwhile: take them off NOT_YET_MOVED"


def test_the_rule_tells_facades_from_layers():
    assert _allowed("cuplug._driver.context_cache") and _allowed("cuplug._array.core")
    assert _allowed("cuplug._public") and _allowed("cuplug._rng.stream")
    assert not _allowed("cuplug.gpuarray") and not _allowed("cuplug.driver")
    assert not _allowed("cuplug") and not _allowed("cuplug._dtypes.x")
    philox = _imports(WING / "philox.py")
    assert "cuplug._rng.stream" in philox  # `from .stream import ...`
    assert "cuplug._core" in philox  # `from cuplug import _core`


def test_cuplug_driver_loads_only_curand_info_of_the_wing():
    # cuplug.driver exports cuRAND's version (as PyCUDA's _driver does): the wing's package
    # imports nothing, so that this does not load the stream, the generators or the array class.
    code = (
        "import sys, cuplug.driver; "
        "print(sorted(m for m in sys.modules if m.startswith('cuplug._rng')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "['cuplug._rng', 'cuplug._rng.curand_info']"
