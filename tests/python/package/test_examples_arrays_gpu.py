"""The array examples print what they promise: the seed's example its doubled array, the NumPy
walkthrough its agreement with NumPy (test_examples_gpu.py runs them; this checks their output)."""

import os

import pytest
from support.examples import EXAMPLES, run

pytestmark = pytest.mark.real_gpu


def run_example(name, tmp_path):
    proc = run(
        os.path.join(EXAMPLES, name),
        CUPLUG_CONFIG="",
        HOME=str(tmp_path),
        CUPLUG_CACHE_DIR=str(tmp_path / "cache"),
    )
    assert proc.returncode == 0, f"{name} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_seed_example_prints_the_doubled_array(tmp_path):
    assert run_example("gpuarray_basic.py", tmp_path).strip() == "[ 2.  4.  6.  8. 10.]"


def test_numpy_walkthrough_agrees_with_numpy(tmp_path):
    out = run_example("numpy_to_gpu.py", tmp_path)
    assert "DIFFERENT" not in out
    assert out.count("same as NumPy") == 9
    assert out.rstrip().endswith("All steps agree with NumPy.")
