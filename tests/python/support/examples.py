"""The scripts of examples/ as tests run them: each declares, in a header line, how it can run

    # example-test: without-gpu, real-gpu

`without-gpu`: runs with no driver (CUPLUG_CUDA_DRIVER names a missing library) and exits 0.
`real-gpu`: runs on a real GPU and exits 0. package/test_examples.py runs the first kind (and
fails a script without the header, so no example goes untested), package/test_examples_gpu.py the
second; package/test_examples_arrays_gpu.py and driver/test_multidevice*.py check what some
print.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
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


def cases(real_gpu: bool):
    """(path, mode) parameters of every script's declared modes: the `real-gpu` ones when real_gpu
    is true (the *_gpu.py file's, marked there), all others (undeclared included) when false."""
    for path in example_scripts():
        name = os.path.relpath(path, EXAMPLES)
        modes = declared_modes(path) or ["undeclared"]
        for mode in modes:
            if (mode == "real-gpu") == real_gpu:
                yield pytest.param(path, mode, id=f"{name}[{mode}]")


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


def check_example_runs(path, mode, tmp_path):
    """The script runs the way its header says (mode) and exits 0; without a GPU it says so."""
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
