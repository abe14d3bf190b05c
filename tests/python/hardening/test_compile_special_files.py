"""Special files where a compile or the driver loader reads a file (issue 26): an ``#include`` of
a FIFO blocked NVRTC forever, ``#include "/dev/zero"`` hung through the nvcc fall-back, and
CUPLUG_CUDA_DRIVER naming a FIFO hung in dlopen. Each case runs in a child process with a time
limit, so that a regression fails instead of hanging the test run. No GPU needed."""

import os
import subprocess
import sys

import pytest

LIMIT_S = 90


def run_child(code, *args, env=None):
    full = dict(os.environ, CUPLUG_DISABLE_CACHE="1")
    full.update(env or {})
    try:
        return subprocess.run(
            [sys.executable, "-c", code, *map(str, args)],
            capture_output=True,
            text=True,
            env=full,
            timeout=LIMIT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child still ran after {LIMIT_S} s: it hangs on the special file")


COMPILE = """
import sys
from cuplug import compiler
from cuplug.driver import CompileError
source, backend = sys.argv[1], sys.argv[2]
try:
    compiler.compile(source, arch="sm_90", target="ptx", include_dirs=sys.argv[3:],
                     backend=None if backend == "default" else backend)
    print("compiled")
except CompileError as e:
    print("CompileError:", str(e).replace("\\n", " "))
"""


@pytest.fixture
def fifo_dir(tmp_path):
    os.mkfifo(tmp_path / "pipe.cuh")
    return tmp_path


@pytest.mark.parametrize("backend", ["default", "nvrtc"])
def test_including_a_fifo_is_a_compile_error_naming_it(fifo_dir, backend):
    r = run_child(COMPILE, '#include "pipe.cuh"\n__global__ void k() {}', backend, fifo_dir)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("CompileError:"), r.stdout + r.stderr[-2000:]
    assert f"{fifo_dir}/pipe.cuh, which is a FIFO (named pipe), not a regular file" in r.stdout


# Under the default backend a host header makes NVRTC fail and nvcc take over; nvcc's host
# preprocessor then read /dev/zero without end.
@pytest.mark.parametrize("backend", ["default", "nvrtc"])
def test_including_dev_zero_is_a_compile_error_naming_it(backend):
    source = '#include <vector>\n#include "/dev/zero"\n__global__ void k() {}'
    r = run_child(COMPILE, source, backend)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "CompileError:" in r.stdout, r.stdout + r.stderr[-2000:]
    assert "/dev/zero, which is a character device, not a regular file" in r.stdout


def test_including_dev_null_is_refused_as_nvrtc_refuses_it():
    # NVRTC itself says "cannot open source file "/dev/null": not a regular file", which made
    # cuplug fall back to nvcc; now the refusal comes first, the same for every device.
    r = run_child(COMPILE, '#include "/dev/null"\n__global__ void k() {}', "default")
    assert "/dev/null, which is a character device, not a regular file" in r.stdout, (
        r.stdout + r.stderr[-2000:]
    )


LOAD_DRIVER = """
import cuplug.driver as drv
try:
    drv.init()
    print("initialised")
except drv.Error as e:
    print(type(e).__name__ + ":", e)
"""


def test_cuplug_cuda_driver_naming_a_fifo_is_refused_by_name(tmp_path):
    fifo = tmp_path / "libcuda.so.1"
    os.mkfifo(fifo)
    r = run_child(LOAD_DRIVER, env={"CUPLUG_CUDA_DRIVER": str(fifo)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"CUPLUG_CUDA_DRIVER={fifo} is not a regular file (a FIFO)" in r.stdout, (
        r.stdout + r.stderr[-2000:]
    )


def test_cuplug_cuda_driver_naming_a_directory_is_refused_by_name(tmp_path):
    r = run_child(LOAD_DRIVER, env={"CUPLUG_CUDA_DRIVER": str(tmp_path)})
    assert f"CUPLUG_CUDA_DRIVER={tmp_path} is not a regular file (a directory)" in r.stdout, (
        r.stdout + r.stderr[-2000:]
    )
