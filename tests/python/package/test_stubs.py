"""Type information: the package ships py.typed and stubs of the extension module cuplug._core
(python/cuplug/_core/*.pyi, made by tools/gen_stubs.sh), and the stubs match the extension."""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
import re
import subprocess

import pytest

import cuplug

ROOT = pathlib.Path(__file__).resolve().parents[3]
SOURCE_PACKAGE = ROOT / "python" / "cuplug"
STUBS = SOURCE_PACKAGE / "_core"
REGENERATE = "bash tools/gen_stubs.sh"


def _stub_text() -> str:
    return "\n".join(p.read_text() for p in sorted(STUBS.glob("*.pyi")))


def test_package_ships_type_information():
    assert (SOURCE_PACKAGE / "py.typed").is_file()
    names = sorted(p.name for p in STUBS.glob("*.pyi"))
    assert names == [
        "__init__.pyi",
        "_array.pyi",
        "_compiler.pyi",
        "_dlpack.pyi",
        "_memory_history.pyi",
        "_nvtx.pyi",
        "allocators.pyi",
        "backends.pyi",
        "gl.pyi",
        "rng.pyi",
    ], names
    # The build tree is the package as installed (python/CMakeLists.txt copies and installs both).
    imported = pathlib.Path(cuplug.__file__).parent
    if imported != SOURCE_PACKAGE:
        assert (imported / "py.typed").is_file(), f"{imported} lacks py.typed"
        assert (imported / "_core" / "__init__.pyi").is_file(), f"{imported} lacks the stubs"


def test_stubs_show_the_public_classes():
    text = (STUBS / "__init__.pyi").read_text()
    for name in (
        "Device",
        "Context",
        "Stream",
        "Event",
        "DeviceAllocation",
        "Module",
        "Function",
        "DeviceMemoryPool",
        "PageLockedMemoryPool",
    ):
        assert re.search(rf"^class {name}\b", text, re.MULTILINE), f"no class {name} in the stubs"
    assert re.search(r"def make_context\(self, flags: .*\) -> Context:", text)
    assert re.search(r"def get_function\(self, name: str\) -> Function:", text)


def test_stubs_name_no_cpp_types():
    """A function bound before the class it returns or takes shows a C++ name, which
    pybind11-stubgen turns into `...`: bind the class first (see init_context.cpp)."""
    text = _stub_text()
    signatures = [line.strip() for line in text.splitlines() if line.lstrip().startswith("def ")]
    assert [s for s in signatures if "::" in s] == [], "a raw C++ name in a signature"
    leaks = re.findall(r"^.*(?:-> \.\.\.:|: \.\.\.[,)]).*$", text, re.MULTILINE)
    assert leaks == [], "signatures whose type pybind11 could not name"
    assert not re.search(r"\barg0\b", text), "an argument without a py::arg name"


def _generated_with() -> tuple[str | None, str | None]:
    first = (STUBS / "__init__.pyi").read_text().splitlines()[0]
    stubgen = re.search(r"pybind11-stubgen ([^,)\s]+)", first)
    bound = re.search(r"pybind11 ([^,)\s]+)", first)
    return (stubgen.group(1) if stubgen else None, bound.group(1) if bound else None)


def test_stubs_match_the_extension():
    try:
        installed = importlib.metadata.version("pybind11-stubgen")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("pybind11-stubgen is not installed (bash tools/ensure_deps.sh installs it)")
    wanted, wanted_pybind11 = _generated_with()
    if installed != wanted:
        pytest.skip(f"the stubs were made with pybind11-stubgen {wanted}, this is {installed}")
    import pybind11

    if pybind11.__version__ != wanted_pybind11:
        pytest.skip(
            f"the stubs were made from an extension built with pybind11 {wanted_pybind11}, "
            f"this one is built with {pybind11.__version__}"
        )
    package = pathlib.Path(cuplug.__file__).parent
    if package.parent.name != "python" or not (package.parent.parent / "CMakeCache.txt").exists():
        pytest.skip(f"cuplug is imported from {package}, not from a build tree")
    env = dict(os.environ, CUPLUG_BUILD_DIR=str(package.parent.parent))
    run = subprocess.run(
        ["bash", str(ROOT / "tools" / "gen_stubs.sh"), "--check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, (
        f"the checked-in stubs differ from the built extension; regenerate them with: "
        f"{REGENERATE}\n{run.stdout}{run.stderr}"
    )
