"""Type checkers over everyday cuplug code: mypy and basedpyright (pyright, as VS Code's Pylance
runs it) check tests/python/package/typed_usage.py against the package as imported here (the
build tree, or an installed cuplug) and must report no error there. A false error there (an
attribute missing from a stub, a parameter typed from its default) is what users see first in
their editors; a result typed Any where the script asserts GPUArray is an error too.

Each run also checks a canary file with one real error, which the checker must report: without
it a run that resolved nothing (everything Any) would pass. Skips, saying why, when a checker is
not installed (tools/ensure_deps.sh installs both)."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

import cuplug

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = HERE / "typed_usage.py"
# The package's search root: the folder holding cuplug/ (build/python, or site-packages).
SEARCH_ROOT = pathlib.Path(cuplug.__file__).resolve().parent.parent

CANARY = """\
from cuplug.gpuarray import GPUArray, zeros

a: GPUArray = zeros(3)
print(a.no_such_attribute)
"""
CANARY_LINE = 4  # the line of the one error each checker must report


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(
            f"{module} is not installed (pip install {module}, or bash tools/ensure_deps.sh)"
        )


def _env() -> dict[str, str]:
    # The checkers find cuplug as the interpreter finds it: through PYTHONPATH's search root,
    # read as an installed package (its own files are not the ones checked).
    path = [str(SEARCH_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))


def _canary(tmp_path: pathlib.Path) -> pathlib.Path:
    canary = tmp_path / "canary.py"
    canary.write_text(CANARY)
    return canary


def _report(errors: list[tuple[str, int, str]], output: str) -> str:
    lines = [f"{pathlib.Path(f).name}:{line}: {message}" for f, line, message in errors]
    return "\n".join(lines) + "\n--- checker output ---\n" + output[-6000:]


def _check(errors: list[tuple[str, int, str]], canary: pathlib.Path, output: str) -> None:
    false = [e for e in errors if pathlib.Path(e[0]).name != canary.name]
    assert false == [], "errors in typed_usage.py (a stub or annotation is wrong):\n" + _report(
        false, output
    )
    caught = [e for e in errors if e[1] == CANARY_LINE and "no_such_attribute" in e[2]]
    assert caught, (
        "the checker did not report the canary's error (a.no_such_attribute): it did not check "
        "against cuplug's types\n" + _report(errors, output)
    )


def test_mypy_accepts_everyday_code(tmp_path):
    _need("mypy")
    canary = _canary(tmp_path)
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nwarn_unused_ignores = True\nstrict_equality = True\n")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(config),
            "--cache-dir",
            str(tmp_path / "mypy_cache"),
            "--python-executable",
            sys.executable,
            "--show-error-codes",
            "--no-error-summary",
            "--no-pretty",
            str(SCRIPT),
            str(canary),
        ],
        env=_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = run.stdout + run.stderr
    errors = []
    for line in run.stdout.splitlines():
        # path:line: error: message  [code]
        parts = line.split(":", 3)
        if len(parts) == 4 and parts[2].strip() == "error":
            errors.append((parts[0], int(parts[1]), parts[3].strip()))
    assert run.returncode in (0, 1), f"mypy failed to run (exit {run.returncode}):\n{output}"
    _check(errors, canary, output)


def test_basedpyright_accepts_everyday_code(tmp_path):
    _need("basedpyright")
    canary = _canary(tmp_path)
    # pyright's "standard" mode: what Pylance and pyright users run by default (basedpyright's
    # own default adds its stricter rules, which flag the user's code, not cuplug's types).
    config = tmp_path / "pyrightconfig.json"
    config.write_text(json.dumps({"typeCheckingMode": "standard"}))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "basedpyright",
            "--project",
            str(config),
            "--pythonpath",
            sys.executable,
            "--outputjson",
            str(SCRIPT),
            str(canary),
        ],
        env=_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        pytest.fail(
            f"basedpyright failed to run (exit {run.returncode}):\n{run.stdout}{run.stderr}"
        )
    output = run.stderr + json.dumps(report["summary"])
    errors = [
        (d["file"], d["range"]["start"]["line"] + 1, d["message"])
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    _check(errors, canary, output)
