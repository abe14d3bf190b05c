"""`import cuplug.compat.pycuda`: pycuda and pycuda.<name> resolve to cuplug's own module objects,
ahead of an installed PyCUDA, with clear errors for what cuplug lacks."""

import os
import sys

import pytest
from support.subprocesses import run_python

import cuplug

PACKAGE = os.path.dirname(cuplug.__file__)


def cuplug_modules():
    """The package's pure-Python modules that import without a device."""
    names = sorted(
        f[:-3]
        for f in os.listdir(PACKAGE)
        if f.endswith(".py")
        and not f.startswith("_")
        and f[:-3] not in ("autoinit", "autoprimaryctx", "autoinit_private")
    )
    return names


def test_pycuda_names_are_cuplug_modules(tmp_path):
    names = cuplug_modules()
    assert "driver" in names
    out = run_python(
        f"""
        import importlib, sys
        import cuplug, cuplug.compat.pycuda
        import pycuda
        assert pycuda is cuplug and pycuda.VERSION == cuplug.VERSION
        for name in {names!r}:
            alias = importlib.import_module("pycuda." + name)
            real = importlib.import_module("cuplug." + name)
            assert alias is real, name
            assert alias.__name__ == "cuplug." + name, alias.__name__
            assert alias.__spec__.name == "cuplug." + name, alias.__spec__
            assert sys.modules["pycuda." + name] is real
        import pycuda.driver as cuda
        from pycuda import driver
        from pycuda._driver import Error
        assert cuda is driver is cuplug.driver and Error is cuplug.driver.Error
        print("ok", len({names!r}))
        """,
        tmp_path,
    )
    assert out.strip() == f"ok {len(names)}"


def test_alias_wins_over_an_installed_pycuda(tmp_path):
    fake = tmp_path / "site" / "pycuda"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("REAL_PYCUDA = True\n")
    (fake / "driver.py").write_text("REAL_PYCUDA = True\n")
    site = str(tmp_path / "site")
    out = run_python(
        """
        import cuplug.compat.pycuda
        import pycuda.driver
        print(hasattr(pycuda, "REAL_PYCUDA"), hasattr(pycuda.driver, "REAL_PYCUDA"))
        cuplug.compat.pycuda.uninstall()
        import pycuda.driver
        print(hasattr(pycuda, "REAL_PYCUDA"), hasattr(pycuda.driver, "REAL_PYCUDA"))
        """,
        tmp_path,
        PYTHONPATH=site + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    assert out.splitlines() == ["False False", "True True"]


def test_installing_after_pycuda_was_imported_is_an_error(tmp_path):
    fake = tmp_path / "site" / "pycuda"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    out = run_python(
        """
        import pycuda
        try:
            import cuplug.compat.pycuda
        except ImportError as e:
            print(e)
        """,
        tmp_path,
        PYTHONPATH=str(tmp_path / "site") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    assert "pycuda is already imported" in out
    assert "import cuplug.compat.pycuda before anything imports pycuda" in out


def test_module_cuplug_lacks_says_so(tmp_path):
    out = run_python(
        """
        import cuplug.compat.pycuda
        for name in ("pycuda.sparse", "pycuda.no_such_module"):
            try:
                __import__(name)
            except ModuleNotFoundError as e:
                print(e.name, "|", e)
        """,
        tmp_path,
    )
    lines = out.splitlines()
    assert lines[0] == (
        "pycuda.sparse | No module named 'pycuda.sparse': cuplug has no "
        "'cuplug.sparse' (cuplug.compat.pycuda maps pycuda.<name> to cuplug.<name>)"
    )
    assert lines[1].startswith("pycuda.no_such_module | ")


def test_install_is_idempotent_and_uninstall_forgets_the_names():
    import cuplug.compat.pycuda as compat

    try:
        compat.install()
        compat.install()
        assert sys.meta_path.count(compat._finder) == 1
        import pycuda.driver  # noqa: F401

        assert sys.modules["pycuda.driver"] is sys.modules["cuplug.driver"]
    finally:
        compat.uninstall()
    assert not compat.installed()
    assert not [n for n in sys.modules if n == "pycuda" or n.startswith("pycuda.")]
    assert sys.modules["cuplug.driver"].__spec__.name == "cuplug.driver"


@pytest.mark.gpu
def test_pycuda_autoinit_runs_cuplugs(tmp_path):
    out = run_python(
        """
        import cuplug.compat.pycuda
        import pycuda.autoinit, pycuda.driver as cuda
        import cuplug.autoinit
        assert pycuda.autoinit is cuplug.autoinit
        assert cuda.Context.get_current() == pycuda.autoinit.context
        print(pycuda.autoinit.device.name() == cuda.Device(0).name())
        """,
        tmp_path,
    )
    assert out.strip() == "True"
