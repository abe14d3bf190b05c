"""Without a CUDA driver, cuplug imports, `python -m cuplug info` works, is_available() and
device_count() say False and 0, and the first GPU call raises cuplug.driver.RuntimeError (also a
builtin RuntimeError) that opens with the library that failed and what to do about it."""

from __future__ import annotations

import ctypes.util
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
from support import fakecuda

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


def test_missing_driver_message_leads_with_the_cause_and_the_fix(no_driver_env):
    """Not "cuInit failed: no CUDA-capable device is detected - ...": the device is not what is
    missing. The code and routine stay on the exception for code that sorts errors by them."""
    script = textwrap.dedent(
        """
        import json
        import cuplug.driver as cuda
        try:
            cuda.init()
        except RuntimeError as e:  # the builtin: cuplug's RuntimeError is one too
            print(json.dumps({"type": type(e).__name__, "message": str(e), "code": e.code,
                              "routine": e.routine, "cuplug": isinstance(e, cuda.RuntimeError)}))
        """
    )
    result = run_python(no_driver_env, "-c", script)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    caught = json.loads(result.stdout)
    assert caught["cuplug"] and caught["type"] == "RuntimeError"
    assert (caught["code"], caught["routine"]) == (100, "cuInit")  # CUDA_ERROR_NO_DEVICE
    message = caught["message"]
    cause = f"the CUDA driver library '{MISSING_DRIVER}' could not be loaded ("
    assert message.startswith(cause), message
    fix = message.index("install the NVIDIA driver, or set CUPLUG_CUDA_DRIVER")
    assert "no CUDA-capable device" not in message[:fix], message
    assert message.endswith("[cuInit: CUDA_ERROR_NO_DEVICE]"), message


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


AVAILABILITY = textwrap.dedent(
    """
    import json, cuplug
    print(json.dumps([cuplug.is_available(), cuplug.device_count(),
                      cuplug.is_available(), cuplug.device_count()]))
    """
)


def availability(env: dict[str, str]) -> list:
    result = run_python(env, "-c", AVAILABILITY)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return json.loads(result.stdout.splitlines()[-1])


def test_availability_without_a_driver(no_driver_env):
    assert availability(no_driver_env) == [False, 0, False, 0]


def test_availability_with_a_library_that_is_not_a_cuda_driver(no_driver_env, tmp_path):
    """A library that loads but is no CUDA driver (libm here), and a folder named as the driver:
    False and 0, no exception."""
    libm = ctypes.util.find_library("m")
    if libm is None:
        pytest.skip("no libm to stand in for a broken driver")
    for broken in (libm, str(tmp_path)):
        env = {**no_driver_env, "CUPLUG_CUDA_DRIVER": broken}
        assert availability(env) == [False, 0, False, 0], broken


@pytest.fixture(scope="module")
def fake_driver_env(no_driver_env) -> dict[str, str]:
    return {**no_driver_env, "CUPLUG_CUDA_DRIVER": fakecuda.fake_driver_or_skip()}


def test_availability_with_a_driver_that_finds_no_device(fake_driver_env):
    env = {**fake_driver_env, "FAKE_CUDA_DEVICE_COUNT": "0"}  # its cuInit: CUDA_ERROR_NO_DEVICE
    assert availability(env) == [False, 0, False, 0]


def test_availability_with_devices(fake_driver_env):
    env = {**fake_driver_env, "FAKE_CUDA_DEVICE_COUNT": "3"}
    assert availability(env) == [True, 3, True, 3]
