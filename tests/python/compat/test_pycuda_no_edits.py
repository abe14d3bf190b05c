"""PyCUDA programs run with no edit at all (issue 24, part B): ``python -m cuplug.compat.pycuda
SCRIPT|-m MODULE [ARGS]``, ``CUPLUG_PYCUDA=1`` through the package's .pth file, the pytest plugin
``-p cuplug.compat.pycuda``, ``python -m pycuda.debug`` through the alias, and the ``pycuda``
shim distribution of tools/build_pycuda_shim.py installed by pip into a venv. No device needed:
the programs only import."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cuplug

REPO = pathlib.Path(__file__).resolve().parents[3]
PTH = REPO / "python" / "cuplug_pycuda_alias.pth"
CHECK = """
import os, sys
import pycuda.driver, pycuda.gpuarray, cuplug.driver, cuplug.gpuarray
assert pycuda.driver is cuplug.driver and pycuda.gpuarray is cuplug.gpuarray
print("ALIAS", __name__, sys.argv[1:], os.environ.get("CUPLUG_PYCUDA"))
"""


def _env(**extra):
    """This environment without CUPLUG_PYCUDA, cuplug importable from any folder."""
    env = {k: v for k, v in os.environ.items() if k != "CUPLUG_PYCUDA"}
    paths = [str(pathlib.Path(cuplug.__file__).parents[1])]
    paths += [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra)
    return env


def _run(args, cwd, env=None, check=True):
    proc = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env or _env(), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_runner_runs_a_script_as_python_does(tmp_path):
    script = tmp_path / "prog" / "main.py"
    script.parent.mkdir()
    (script.parent / "helper.py").write_text("VALUE = 42\n")
    script.write_text(
        CHECK
        + textwrap.dedent("""
        import subprocess, helper  # the script's folder is sys.path[0], as with python main.py
        print("HELPER", helper.VALUE)
        child = subprocess.run([sys.executable, "-c", "import os; print(os.environ['CUPLUG_PYCUDA'])"],
                               capture_output=True, text=True)
        print("CHILD", child.stdout.strip())
        """)  # noqa: E501
    )
    out = _run(["-m", "cuplug.compat.pycuda", str(script), "a", "--b"], tmp_path).stdout
    assert "ALIAS __main__ ['a', '--b'] 1" in out
    assert "HELPER 42" in out and "CHILD 1" in out


def test_runner_runs_a_module_and_passes_its_exit_status(tmp_path):
    (tmp_path / "mymod.py").write_text(CHECK + "sys.exit(3)\n")
    proc = _run(["-m", "cuplug.compat.pycuda", "-m", "mymod", "x"], tmp_path, check=False)
    assert proc.returncode == 3, proc.stderr
    assert "ALIAS __main__ ['x'] 1" in proc.stdout


def test_runner_usage_errors(tmp_path):
    proc = _run(["-m", "cuplug.compat.pycuda"], tmp_path, check=False)
    assert proc.returncode == 2 and "usage: python -m cuplug.compat.pycuda SCRIPT" in proc.stderr
    proc = _run(["-m", "cuplug.compat.pycuda", "nothere.py"], tmp_path, check=False)
    assert proc.returncode == 2 and "can't open file 'nothere.py'" in proc.stderr
    proc = _run(["-m", "cuplug.compat.pycuda", "-m"], tmp_path, check=False)
    assert proc.returncode == 2 and "Argument expected for the -m option" in proc.stderr


def test_pycuda_debug_runs_cuplug_debug_through_the_alias(tmp_path):
    script = tmp_path / "dbg.py"
    script.write_text(
        "import sys, cuplug.driver\nprint('DEBUG', cuplug.driver.CUDA_DEBUGGING, sys.argv)\n"
    )
    out = _run(
        ["-m", "cuplug.compat.pycuda", "-m", "pycuda.debug", str(script), "q"], tmp_path
    ).stdout
    assert f"DEBUG True [{str(script)!r}, 'q']" in out


@pytest.mark.parametrize(("value", "installed"), [(None, False), ("0", False), ("1", True)])
def test_pth_file_installs_the_alias_only_when_asked(tmp_path, value, installed):
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    shutil.copy(PTH, site_dir)
    code = (
        f"import site, sys; site.addsitedir({str(site_dir)!r}); "
        "print('LOADED', 'cuplug' in sys.modules, "
        "any(type(f).__name__ == 'PycudaAliasFinder' for f in sys.meta_path))"
    )
    env = _env() if value is None else _env(CUPLUG_PYCUDA=value)
    out = _run(["-c", code], tmp_path, env).stdout
    assert f"LOADED {installed} {installed}" in out


def test_pth_file_is_one_cheap_line_installed_into_site_packages():
    lines = PTH.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("import os;")
    cmake = (REPO / "python" / "CMakeLists.txt").read_text()
    installed = r"if\(SKBUILD\)\s+install\(FILES cuplug_pycuda_alias\.pth DESTINATION \.\)"
    assert re.search(installed, cmake)


def test_pytest_plugin_installs_the_alias_and_passes_it_on(tmp_path):
    (tmp_path / "test_uses_pycuda.py").write_text(
        "import os\nimport pycuda.gpuarray\nimport cuplug.gpuarray\n\n"
        "def test_alias():\n    assert pycuda.gpuarray is cuplug.gpuarray\n"
        "    assert os.environ['CUPLUG_PYCUDA'] == '1'\n"
    )
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)]
    proc = _run([*args, "-p", "cuplug.compat.pycuda", "test_uses_pycuda.py"], tmp_path, check=False)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr
    without = _run([*args, "test_uses_pycuda.py"], tmp_path, check=False)
    assert without.returncode != 0 and "No module named 'pycuda'" in without.stdout


def test_pycuda_shim_wheel_installs_into_a_venv_and_gives_cuplug(tmp_path):
    out = _run([str(REPO / "tools" / "build_pycuda_shim.py"), "--out", str(tmp_path / "dist")],
               tmp_path).stdout.strip()  # fmt: skip
    wheel = pathlib.Path(out)
    assert wheel.name == f"pycuda-2026.1+cuplug.{cuplug.__version__}-py3-none-any.whl"
    venv = tmp_path / "venv"
    _run(["-m", "venv", "--without-pip", str(venv)], tmp_path)
    python = venv / "bin" / "python"
    _run(["-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
          str(wheel)], tmp_path)  # fmt: skip
    numpy_site = str(pathlib.Path(np.__file__).parents[1])
    cuplug_site = str(pathlib.Path(cuplug.__file__).parents[1])
    env = _env(PYTHONPATH=os.pathsep.join([cuplug_site, numpy_site]))
    code = (
        "import importlib.metadata as md, pycuda.gpuarray, cuplug.gpuarray, pycuda; "
        "assert pycuda.gpuarray is cuplug.gpuarray and pycuda is cuplug; "
        "print('SHIM', md.version('pycuda'), pycuda.__spec__.name)"
    )
    proc = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"SHIM 2026.1+cuplug.{cuplug.__version__} cuplug" in proc.stdout
    script = tmp_path / "dbg.py"
    script.write_text("import cuplug.driver\nprint('DEBUG', cuplug.driver.CUDA_DEBUGGING)\n")
    proc = subprocess.run([str(python), "-m", "pycuda.debug", str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0 and "DEBUG True" in proc.stdout, proc.stderr
