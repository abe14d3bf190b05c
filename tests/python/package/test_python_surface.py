"""cuplug's public Python surface (issue 15): every public module lists its names (``__all__``,
``dir()``), every public function, class, method and property has a docstring, names its
arguments, shows Python types (no C++ type names, no bare ``object``), and the package folder holds
only modules pkgutil can import. support/surface_audit.py does the walking; support/surface_debt.txt
lists what is known to be missing still (docstrings, NumPy ``Parameters`` sections, typed
arguments): a name may leave that list, never join it. No device needed."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from support import surface_audit

import cuplug

DEBT_FILE = pathlib.Path(surface_audit.__file__).with_name("surface_debt.txt")
# Kinds of problem that must be absent; the others are held to the debt list.
NEVER = ("no_all", "dir_leak", "foreign", "unnamed", "cxx_leak")
RATCHETED = ("no_doc", "object_arg", "no_params_doc")


def _debt() -> dict[str, set[str]]:
    """{kind: names} from surface_debt.txt (lines "kind name"; # starts a comment)."""
    debt: dict[str, set[str]] = {kind: set() for kind in RATCHETED}
    for line in DEBT_FILE.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            kind, name = line.split()
            debt[kind].add(name)
    return debt


@pytest.fixture(scope="module")
def audit() -> surface_audit.Audit:
    return surface_audit.run()


@pytest.mark.parametrize("kind", NEVER)
def test_no_surface_problem_of_kind(audit, kind):
    assert audit.found[kind] == [], f"{kind}: {surface_audit.__doc__}"


@pytest.mark.parametrize("kind", RATCHETED)
def test_no_new_surface_debt(audit, kind):
    new = sorted(set(audit.found[kind]) - _debt()[kind])
    assert new == [], (
        f"{kind}: public names new to the problem (surface_audit.py says what it means): fix them "
        "rather than adding them to surface_debt.txt"
    )


@pytest.mark.parametrize("kind", RATCHETED)
def test_paid_debt_leaves_the_list(audit, kind):
    # Only names of modules this machine can import (cuplug.gl may be missing its backend).
    imported = {n for n, m in audit.modules.items() if not isinstance(m, str)}
    stale = sorted(
        n
        for n in _debt()[kind] - set(audit.found[kind])
        if any(n.startswith(m + ".") for m in imported)
        and not any(n.startswith(m + ".") for m in set(audit.modules) - imported)
    )
    assert stale == [], f"fixed, remove these '{kind}' lines from surface_debt.txt"


def test_audit_finds_what_it_looks_for():
    """The checks themselves: each kind of problem is found in a made-up module."""
    import types

    mod = types.ModuleType("cuplug._surface_probe")
    mod.os = os

    def helper(arg0, x):
        return x

    def documented(x):
        """Adds one.

        Parameters
        ----------
        x : int
            A number.
        """
        return x + 1

    def leaky():
        """Returns a cuplug::python::context."""

    helper.__module__ = documented.__module__ = leaky.__module__ = mod.__name__
    mod.helper, mod.documented, mod.leaky, mod.path_join = helper, documented, leaky, os.path.join
    mod.__all__ = ["helper", "documented", "leaky", "path_join"]
    sys.modules[mod.__name__] = mod
    try:
        found = surface_audit.Audit()
        found.module(mod.__name__)
    finally:
        del sys.modules[mod.__name__]
    probe = mod.__name__
    assert found.found["dir_leak"] == [f"{probe}.os"]
    assert found.found["foreign"] == [f"{probe}.path_join"]
    assert found.found["no_doc"] == [f"{probe}.helper"]
    assert found.found["unnamed"] == [f"{probe}.helper"]
    assert found.found["cxx_leak"] == [f"{probe}.leaky"]
    assert found.found["no_params_doc"] == []
    # pybind11's signatures: unnamed and untyped arguments.
    doc = "f(self: X, arg0: object, y: int) -> None\n\nDoes it."
    found = surface_audit.Audit()
    found._pybind11_signatures("X.f", "f", doc)
    assert found.found["unnamed"] == ["X.f"] and found.found["object_arg"] == ["X.f"]
    found = surface_audit.Audit()
    found._pybind11_signatures("X.g", "g", "g(self: X, stream: Stream | None = None) -> int")
    assert found.found["unnamed"] == [] and found.found["object_arg"] == []


def test_dir_shows_public_names_only():
    import cuplug.driver
    import cuplug.gpuarray

    assert "_core" not in dir(cuplug) and "contextlib" not in dir(cuplug)
    assert {"use", "using", "driver", "gpuarray", "config", "plugins"} <= set(dir(cuplug))
    assert "np" not in dir(cuplug.gpuarray) and "GPUArray" in dir(cuplug.gpuarray)
    assert sorted(dir(cuplug.driver)) == sorted(cuplug.driver.__all__)
    # The kinds are attributes of cuplug.config (cuplug.config.allocator).
    assert "allocator" in dir(cuplug.config) and "os" not in dir(cuplug.config)


def test_core_library_is_outside_the_module_namespace():
    """libcuplug_core.so lives in cuplug/lib/ (no Python package), where pkgutil does not take
    it for an extension module; the extension and the plugins find it there."""
    package = pathlib.Path(cuplug.__file__).parent
    assert not list(package.glob("libcuplug_core*.so*")), "the core is in the package folder"
    assert (package / "lib" / "libcuplug_core.so").is_file()
    assert not (package / "lib" / "__init__.py").exists()
    assert pathlib.Path(cuplug.plugins.package_dir()) == package / "plugins"


# Modules that make a context when imported: they need a device (the real or the fake driver).
NEEDS_DEVICE = {
    "cuplug.autoinit",
    "cuplug.autoinit_private",
    "cuplug.autoprimaryctx",
    "cuplug.gl.autoinit",
}

WALK = r"""
import importlib, json, pkgutil, sys, traceback
import cuplug
failed = {}
def onerror(name):
    failed[name] = "".join(traceback.format_exception_only(*sys.exc_info()[:2])).strip()
names = []
for info in pkgutil.walk_packages(cuplug.__path__, "cuplug.", onerror=onerror):
    names.append(info.name)
    try:
        importlib.import_module(info.name)
    except BaseException as e:
        driver = isinstance(e, cuplug._core.Error)  # no driver or no device
        failed[info.name] = ("driver " if driver else "") + f"{type(e).__name__}: {e}"
print(json.dumps({"names": names, "failed": failed}))
"""


def test_walk_packages_imports_every_module():
    """pkgutil.walk_packages (what Sphinx's autosummary and IDEs use) finds every module of the
    package and each imports: a module needing GL may raise ImportError saying why, a module
    making a context may fail only with cuplug's error where there is no driver or device."""
    env = dict(os.environ, CUPLUG_CONFIG="")
    proc = subprocess.run(
        [sys.executable, "-c", WALK], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    names, failed = set(result["names"]), result["failed"]
    assert {"cuplug.driver", "cuplug.gpuarray", "cuplug._core", "cuplug.gl"} <= names
    assert not any("libcuplug" in n or n.startswith("cuplug.lib") for n in names)
    unexpected = {}
    for name, error in failed.items():
        if name.startswith("cuplug.gl") and error.startswith("ImportError: cuplug.gl"):
            continue  # no interop backend here: the message says why
        if name in NEEDS_DEVICE and error.startswith("driver "):
            continue  # no driver or no device here: cuplug says which
        unexpected[name] = error
    assert unexpected == {}


def _runpath(library: pathlib.Path) -> list[str]:
    """The DT_RUNPATH / DT_RPATH entries of an ELF file (readelf -d)."""
    out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "(RUNPATH)" in line or "(RPATH)" in line:
            return line.split("[", 1)[1].rstrip("]").split(":")
    return []


def test_extension_and_plugins_find_the_core_through_origin():
    """The extension looks in $ORIGIN/lib and the plugins in $ORIGIN/../lib (build tree and
    wheel alike), so the package works wherever it is copied."""
    if not shutil.which("readelf"):
        pytest.skip("readelf (binutils) is not installed")
    package = pathlib.Path(cuplug.__file__).parent
    assert _runpath(pathlib.Path(cuplug._core.__file__))[0] == "$ORIGIN/lib"
    plugins = sorted((package / "plugins").glob("lib*.so"))
    assert plugins
    for plugin in plugins:
        assert "$ORIGIN/../lib" in _runpath(plugin), plugin.name


def test_cmake_install_layout_imports_and_finds_its_plugins(tmp_path):
    """A plain CMake install (<prefix>/cuplug, <prefix>/lib/libcuplug_core.so,
    <prefix>/lib/cuplug/plugins) imports from the prefix alone and loads its own plugins."""
    build = os.environ.get("CUPLUG_BUILD_DIR")
    if not build or not shutil.which("cmake"):
        pytest.skip("needs CUPLUG_BUILD_DIR (tools/test.sh sets it) and cmake")
    proc = subprocess.run(
        ["cmake", "--install", build, "--prefix", str(tmp_path)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cmake --install {build} failed (a partial build?): {proc.stderr[-300:]}")
    libdir = next(p for p in (tmp_path / "lib", tmp_path / "lib64") if p.is_dir())
    assert (libdir / "libcuplug_core.so").is_file()
    assert not (tmp_path / "cuplug" / "libcuplug_core.so").exists()
    code = (
        "import cuplug, cuplug.plugins as p; print(p.package_dir()); "
        "print(sorted(i.name for i in p.available('allocator')))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUPLUG_PLUGIN")}
    env.update(PYTHONPATH=str(tmp_path), CUPLUG_CONFIG="")
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    folder, allocators = run.stdout.splitlines()[:2]
    assert ".." not in pathlib.Path(folder).parts, folder  # reached through $ORIGIN/../lib
    assert pathlib.Path(folder).resolve() == (libdir / "cuplug" / "plugins").resolve()
    assert "device" in allocators
