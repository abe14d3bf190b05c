"""Every script in examples/ runs, in a subprocess, the way its header says it can:

    # example-test: without-gpu, real-gpu

`without-gpu`: runs with no driver (CUPLUG_CUDA_DRIVER names a missing library) and exits 0.
`real-gpu`: runs on a real GPU and exits 0 (test_examples_gpu.py, marked real_gpu: skipped
elsewhere, with the reason). A script without the header fails here, so no example goes untested.
The scripts, their headers and how one runs: support/examples.py.
"""

import os
import re

import pytest
from support.examples import EXAMPLES, cases, check_example_runs, example_scripts, run


def test_examples_exist():
    assert example_scripts(), f"no example scripts under {EXAMPLES}"


@pytest.mark.parametrize("path, mode", list(cases(real_gpu=False)))
def test_example_runs(path, mode, tmp_path):
    check_example_runs(path, mode, tmp_path)


def test_demo_without_gpu_explains_and_compiles(tmp_path):
    proc = run(
        os.path.join(EXAMPLES, "demo.py"),
        CUPLUG_CONFIG="",
        HOME=str(tmp_path),
        CUPLUG_CUDA_DRIVER="/nonexistent/libcuda.so.1",
        CUPLUG_CACHE_DIR=str(tmp_path / "cache"),
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "backends in use" in out and "allocator" in out and "built-in default" in out
    assert "/nonexistent/libcuda.so.1" in out
    assert re.search(r"\d+ bytes of PTX \(\.version \d+\.\d+, \.target sm_90\)", out), out
    assert "Running the kernel needs an NVIDIA GPU" in out
