"""The test process under compute-sanitizer (tools/gpu_check.sh runs memcheck with
`--target-processes application-only`): how to tell, and the children it must not start.

A test that starts a child process is skipped when it starts it: the tool checks only this
process, so what the child does goes unchecked anyway, and children were where every memcheck
run went wrong. With the tool's variables inherited, the groups holding tests that start a
hundred children stalled at them and two such tests failed only under the tool; with the
variables taken out of the children's environment, the test process died of a segmentation
fault while it waited for a child, three times in four groups (H200, 2026-11-28). Python starts
children through _posixsubprocess.fork_exec (subprocess, multiprocessing's spawn and
forkserver; subprocess keeps its own name for it), os.fork and os.posix_spawn; C++ starting nvcc
is not affected."""

from __future__ import annotations

import os

import pytest

CHILD_SKIP = (
    "starts a child process: under compute-sanitizer (application-only) children are not "
    "checked, and waiting for them crashed the watched process (tests/python/support/sanitizer.py)"
)


def under_compute_sanitizer() -> bool:
    """compute-sanitizer started this process: the variables it exports to its target."""
    injection = os.path.basename(os.environ.get("CUDA_INJECTION64_PATH", ""))
    return "NV_SANITIZER_INJECTION_PORT_BASE" in os.environ or injection.startswith("libsanitizer")


def children_refused() -> bool:
    """Whether this process's tool is memcheck, where children went wrong. racecheck and
    synccheck (tools/gpu_check.sh says which through CUPLUG_SANITIZER_TOOL; compute-sanitizer's
    default tool is memcheck) ran the tests that start children without trouble, and those tests
    are what they check: CuPy and PyTorch start children as they are imported."""
    return os.environ.get("CUPLUG_SANITIZER_TOOL", "memcheck") == "memcheck"


FRAMES_HELD_SKIP = (
    "checks that what it deleted is gone: under compute-sanitizer's memcheck, whose host "
    "backtraces keep the Python frames they walk alive with their locals (an array held by "
    "zeros()'s frame, a Sobol table by its generator's __init__: H200, 2026-11-28), it cannot "
    "tell; the tests part of tools/gpu_check.sh runs it without the tool"
)


def skip_if_frames_held() -> None:
    """Skips a test that deletes an object and checks it is gone, under memcheck. With host
    backtraces off (--show-backtrace device) the test passed under the tool, but two memcheck
    groups then crashed inside cuCtxDestroy (H200, 2026-11-28), which the default settings never
    did in a whole run, so tools/gpu_check.sh keeps the defaults and these tests skip there."""
    if under_compute_sanitizer() and children_refused():
        pytest.skip(FRAMES_HELD_SKIP)


def refuse_children() -> None:
    """From now on, starting a child process skips the test that does it."""
    import _posixsubprocess
    import subprocess

    def refuse(*args, **kwargs):
        pytest.skip(CHILD_SKIP)

    _posixsubprocess.fork_exec = refuse
    subprocess._fork_exec = refuse  # bound at subprocess's import
    for name in ("fork", "posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            setattr(os, name, refuse)
