"""``import cuplug`` then ``cuplug.gpuarray``, ``cuplug.driver``, ...: the public submodules are
attributes of the package, imported on first use (PEP 562 ``__getattr__``), so ``import cuplug``
stays quick and opens no driver. Each check runs in a fresh interpreter, where nothing has
imported the submodules yet. No device needed; the driver is a missing file throughout."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import cuplug

# The public submodules, each reachable as cuplug.<name> after `import cuplug`.
PUBLIC = (
    "characterize",
    "compat",
    "compiler",
    "cumath",
    "curandom",
    "driver",
    "elementwise",
    "gl",
    "gpuarray",
    "memory",
    "random",
    "reduction",
    "scan",
    "tools",
)
# Importing these does something (a context, kernel debugging): never imported by an attribute.
WITH_SIDE_EFFECTS = ("autoinit", "autoinit_private", "autoprimaryctx", "debug")


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    spec = importlib.util.find_spec("cuplug")
    assert spec is not None and spec.submodule_search_locations
    package_parent = pathlib.Path(next(iter(spec.submodule_search_locations))).parent
    env = dict(os.environ)
    env["CUPLUG_CUDA_DRIVER"] = "/nonexistent/libcuda.so.1"
    env["PYTHONPATH"] = os.pathsep.join([str(package_parent), env.get("PYTHONPATH", "")])
    return env


def run(env: dict[str, str], script: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return json.loads(result.stdout.splitlines()[-1])


def test_import_cuplug_imports_no_public_submodule(env):
    loaded = run(
        env,
        """
        import json, sys
        import cuplug
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("cuplug."))))
        """,
    )
    public = {f"cuplug.{name}" for name in PUBLIC}
    assert not public & set(loaded), f"imported by `import cuplug`: {sorted(public & set(loaded))}"


@pytest.mark.parametrize("name", PUBLIC)
def test_submodule_is_an_attribute_after_import_cuplug(env, name):
    if name == "gl" and cuplug.plugins.unavailable_reason("interop") is not None:
        pytest.skip("cuplug.gl needs the interop backend (test_unavailable_gl_is_attribute_error)")
    got = run(
        env,
        f"""
        import json, sys
        import cuplug
        module = cuplug.{name}
        print(json.dumps([module.__name__, module is sys.modules["cuplug.{name}"],
                          "{name}" in vars(cuplug)]))
        """,
    )
    assert got == [f"cuplug.{name}", True, True]


def test_the_readme_way_works_without_a_driver(env):
    """The issue's case: `import cuplug; cuplug.gpuarray` (AttributeError before)."""
    got = run(
        env,
        """
        import json
        import cuplug
        print(json.dumps([cuplug.gpuarray.GPUArray.__name__, cuplug.driver.Device.__name__,
                          cuplug.compiler.SourceModule.__name__, cuplug.is_available()]))
        """,
    )
    assert got == ["GPUArray", "Device", "SourceModule", False]


def test_dir_lists_the_submodules_before_they_are_imported(env):
    got = run(
        env,
        """
        import json, sys
        import cuplug
        names = dir(cuplug)
        print(json.dumps([names, "cuplug.gpuarray" in sys.modules]))
        """,
    )
    names, imported = got
    assert not imported, "dir(cuplug) imported cuplug.gpuarray"
    assert set(PUBLIC) <= set(names)
    assert {"is_available", "device_count", "use", "using", "config"} <= set(names)
    assert not set(WITH_SIDE_EFFECTS) & set(names)


def test_modules_with_side_effects_are_not_imported_by_attribute(env):
    got = run(
        env,
        """
        import json, sys
        import cuplug
        missing = [name for name in ("autoinit", "autoprimaryctx", "debug", "no_such_module")
                   if not hasattr(cuplug, name)]
        print(json.dumps([missing, sorted(m for m in sys.modules
                                          if m in ("cuplug.autoinit", "cuplug.debug"))]))
        """,
    )
    assert got == [["autoinit", "autoprimaryctx", "debug", "no_such_module"], []]


def test_unavailable_gl_is_attribute_error_with_the_reason(env):
    """Without the interop backend, cuplug.gl is an AttributeError (hasattr() says False) that
    carries the ImportError's reason."""
    got = run(
        {**env, "CUPLUG_INTEROP": "no_such_interop"},
        """
        import json
        import cuplug
        try:
            cuplug.gl
        except AttributeError as e:
            print(json.dumps([str(e), type(e.__cause__).__name__]))
        else:
            print(json.dumps(None))
        """,
    )
    assert got is not None, "cuplug.gl imported with an interop backend that does not exist"
    message, cause = got
    assert message.startswith("module 'cuplug' has no attribute 'gl': cuplug.gl is not available")
    assert cause == "ImportError"
