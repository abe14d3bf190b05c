"""Every script in examples/ runs, in a subprocess, the way its header says it can:

    # example-test: without-gpu, real-gpu

`without-gpu`: runs with no driver (CUPLUG_CUDA_DRIVER names a missing library) and exits 0.
`real-gpu`: runs on a real GPU and exits 0 (marked real_gpu: skipped elsewhere, with the reason).
A script without the header fails here, so no example goes untested.
"""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
HEADER = re.compile(r"^# example-test: *(.+)$", re.M)
MODES = ("without-gpu", "real-gpu")


def example_scripts():
    found = []
    for folder, dirs, files in os.walk(EXAMPLES):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build", "__")))
        found += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".py")]
    return found


def declared_modes(path):
    with open(path) as f:
        match = HEADER.search(f.read(4000))
    if not match:
        return None
    return [m.strip() for m in match.group(1).split(",")]


def cases():
    for path in example_scripts():
        name = os.path.relpath(path, EXAMPLES)
        modes = declared_modes(path) or ["undeclared"]
        for mode in modes:
            marks = [pytest.mark.real_gpu] if mode == "real-gpu" else []
            yield pytest.param(path, mode, id=f"{name}[{mode}]", marks=marks)


def example_env(keep=(), **env):
    """This process's environment less its CUPLUG_ variables (but the build, the cache and those
    in ``keep``), with ``env`` on top: what an example runs with."""
    kept = ("CUPLUG_BUILD_DIR", "CUPLUG_CACHE_DIR", *keep)
    full = {k: v for k, v in os.environ.items() if not k.startswith("CUPLUG_") or k in kept}
    full.update(env)
    return full


def run(path, **env):
    return subprocess.run(
        [sys.executable, path],
        cwd=os.path.dirname(path),
        env=example_env(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_examples_exist():
    assert example_scripts(), f"no example scripts under {EXAMPLES}"


@pytest.mark.parametrize("path, mode", list(cases()))
def test_example_runs(path, mode, tmp_path):
    assert mode in MODES, (
        f"{path} needs a header line '# example-test: <modes>' with modes from {MODES}, "
        f"got {mode!r}"
    )
    env = {"CUPLUG_CONFIG": "", "HOME": str(tmp_path), "CUPLUG_CACHE_DIR": str(tmp_path / "cache")}
    if mode == "without-gpu":
        env["CUPLUG_CUDA_DRIVER"] = "/nonexistent/libcuda.so.1"
    proc = run(path, **env)
    assert proc.returncode == 0, f"{path} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    if mode == "without-gpu":
        # An example that cannot use a GPU says so rather than failing silently.
        assert "GPU" in proc.stdout, proc.stdout


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
