"""tools/ensure_deps.sh, behind the README's two commands: a Python outside a virtual environment
(a system Python that may refuse pip, PEP 668) gets a virtual environment of the scripts' own, one
already in a virtual environment is used as it is, and stdout carries only the interpreter."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
BASE = pathlib.Path(sys.base_prefix) / "bin" / "python3"
# What ensure_deps.sh would otherwise fetch from PyPI (the test must not need the network).
NEEDED = ("numpy", "pybind11", "pytest", "pybind11_stubgen", "ruff", "hypothesis")


def base_has_everything():
    probe = (
        "import importlib.util as u, sys; "
        "sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))"
    )
    return subprocess.run([str(BASE), "-c", probe, *NEEDED]).returncode == 0


def ensure_deps(python, venv):
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update({"PYTHON": str(python), "CUPLUG_VENV": str(venv)})
    proc = subprocess.run(
        ["bash", str(ROOT / "tools" / "ensure_deps.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, proc.stderr


@pytest.mark.skipif(not BASE.exists(), reason=f"no base interpreter at {BASE}")
def test_a_python_outside_a_venv_gets_its_own_venv_and_one_inside_is_used_as_is(tmp_path):
    if not base_has_everything():
        pytest.skip(f"{BASE} lacks some of {NEEDED}: the scripts would fetch them from PyPI")
    venv = tmp_path / "venv"
    out, err = ensure_deps(BASE, venv)
    assert out == f"{venv}/bin/python\n"  # the interpreter, and nothing else, on stdout
    assert f"making a virtual environment for cuplug's build and tests: {venv}" in err
    assert "include-system-site-packages = true" in (venv / "pyvenv.cfg").read_text()
    assert "pip install" not in err  # what the base interpreter has is reused, not fetched

    other = tmp_path / "other"
    out, err = ensure_deps(venv / "bin" / "python", other)
    assert out == f"{venv}/bin/python\n"
    assert not other.exists() and "making a virtual environment" not in err


def test_a_deselect_file_leaves_out_the_tests_it_names(tmp_path):
    # tools/gpu_check.sh resumes a crashed memcheck group with the tests that ran before listed
    # in CUPLUG_DESELECT_FILE (tests/python/conftest.py); ids with spaces and brackets included.
    target = "tests/python/package/test_dev_scripts.py"
    me = f"{target}::test_a_deselect_file_leaves_out_the_tests_it_names"
    (tmp_path / "done.txt").write_text(f"{me}\n{target}::test_no_such_test[a b]\n")

    def collect(**env):
        base = {k: v for k, v in os.environ.items() if k != "CUPLUG_DESELECT_FILE"}
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", me],
            cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        return proc.stdout + proc.stderr

    out = collect(CUPLUG_DESELECT_FILE=str(tmp_path / "done.txt"))
    assert "1 deselected" in out, out
    out = collect()
    assert "1 test collected" in out, out
