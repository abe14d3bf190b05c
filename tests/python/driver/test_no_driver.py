"""Without a CUDA driver, cuplug imports, `python -m cuplug info` works, and the first GPU call
raises cuplug.driver.RuntimeError (also a builtin RuntimeError) naming the library and what to
do about it."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

MISSING_DRIVER = "/nonexistent/libcuda.so.1"


@pytest.fixture(scope="module")
def no_driver_env() -> dict[str, str]:
    spec = importlib.util.find_spec("cuplug")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("cuplug is not importable: build it and set PYTHONPATH=<build dir>/python")
    package_parent = pathlib.Path(next(iter(spec.submodule_search_locations))).parent
    env = dict(os.environ)
    env["CUPLUG_CUDA_DRIVER"] = MISSING_DRIVER
    env["PYTHONPATH"] = os.pathsep.join([str(package_parent), env.get("PYTHONPATH", "")])
    return env


def run_python(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_import_works_without_a_driver(no_driver_env):
    result = run_python(no_driver_env, "-c", "import cuplug, cuplug.driver; print('imported')")
    assert result.returncode == 0, result.stderr
    assert "imported" in result.stdout


def test_info_works_without_a_driver(no_driver_env):
    result = run_python(no_driver_env, "-m", "cuplug", "info")
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert MISSING_DRIVER in result.stdout, (
        f"`python -m cuplug info` should say which driver library it could not open:\n"
        f"{result.stdout}"
    )


def test_first_gpu_call_explains_the_missing_driver(no_driver_env):
    script = textwrap.dedent(
        """
        import cuplug.driver as cuda
        for attempt in range(2):  # the process stays usable: the second call says the same
            try:
                cuda.init()
            except cuda.RuntimeError as e:
                print("RuntimeError:", e)
            else:
                raise SystemExit("cuplug.driver.init() succeeded without a driver")
        """
    )
    result = run_python(no_driver_env, "-c", script)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    messages = [line for line in result.stdout.splitlines() if line.startswith("RuntimeError:")]
    assert len(messages) == 2 and messages[0] == messages[1], result.stdout
    message = messages[0]
    assert MISSING_DRIVER in message, f"the error should name the library: {message}"
    assert "CUPLUG_CUDA_DRIVER" in message or "install" in message.lower(), (
        f"the error should say what to do: {message}"
    )


def test_driver_runtime_error_is_also_the_builtin(no_driver_env):
    script = textwrap.dedent(
        """
        import builtins
        import cuplug.driver as cuda
        assert issubclass(cuda.RuntimeError, cuda.Error)
        assert issubclass(cuda.RuntimeError, builtins.RuntimeError)
        assert cuda.RuntimeError is not builtins.RuntimeError
        print("ok")
        """
    )
    result = run_python(no_driver_env, "-c", script)
    assert result.returncode == 0, result.stderr
