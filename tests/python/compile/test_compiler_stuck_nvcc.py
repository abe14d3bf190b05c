"""cuplug.compiler against an nvcc that never finishes: CUPLUG_COMPILE_TIMEOUT ends it, and Ctrl-C,
an exiting Python or a killed one leave no nvcc running; the nvcc helpers (preprocess_source) have
the same limits. No device needed. The rest of the compiler's tests: test_compiler.py."""

import os
import subprocess
import sys
import time

import pytest
from support.compile_sources import DOUBLE_ARRAY, unique

import cuplug.driver as drv
from cuplug import compiler

# ---- a stuck nvcc ----------------------------------------------------------------------------

# Answers nothing, starts a child, records both pids, waits forever.
HANGING_NVCC = """#!/bin/sh
sleep 1000 &
echo $$ $! > "{pids}"
wait
"""


def hanging_nvcc(tmp_path):
    script = tmp_path / "nvcc"
    script.write_text(HANGING_NVCC.format(pids=tmp_path / "pids"))
    script.chmod(0o755)
    return str(script)


def wait_for_pids(tmp_path, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = (tmp_path / "pids").read_text() if (tmp_path / "pids").exists() else ""
        if len(text.split()) == 2:
            return [int(p) for p in text.split()]
        time.sleep(0.05)
    raise AssertionError("the stand-in nvcc never started")


def running(pid):
    """Alive and not a zombie (an orphan's zombie may wait long for a reaper in a container)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def gone(pids, seconds=10):
    deadline = time.monotonic() + seconds
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(running(p) for p in pids)


def test_a_stuck_nvcc_times_out_and_leaves_nothing_running(tmp_path, monkeypatch):
    monkeypatch.setenv("CUPLUG_COMPILE_TIMEOUT", "1")
    start = time.monotonic()
    with pytest.raises(drv.CompileError, match="did not finish compiling kernel.cu within 1 s"):
        compiler.compile(
            unique(DOUBLE_ARRAY), arch="sm_90", backend="nvcc", nvcc=hanging_nvcc(tmp_path)
        )
    assert time.monotonic() - start < 30
    assert gone(wait_for_pids(tmp_path, 1))


# SIGINT raises KeyboardInterrupt as in an interactive Python, even where the parent (an xdist
# worker, say) ignores SIGINT: an ignored signal stays ignored across exec, and Python then
# installs no handler of its own.
STUCK_COMPILE = """
import signal, sys, threading
signal.signal(signal.SIGINT, signal.default_int_handler)
from cuplug import compiler
def work():
    compiler.compile('__global__ void k() {}', arch='sm_90', backend='nvcc', nvcc=sys.argv[1])
if sys.argv[2] == "thread":
    threading.Thread(target=work, daemon=True).start()
    import time, os
    while not os.path.exists(sys.argv[3]):
        time.sleep(0.05)
    time.sleep(0.2)
    sys.exit(0)
try:
    work()
except KeyboardInterrupt:
    print("KeyboardInterrupt")
"""


def start_stuck(tmp_path, how):
    import signal as _signal  # noqa: F401  (documents what the callers send)

    env = dict(os.environ, CUPLUG_COMPILE_TIMEOUT="0")
    proc = subprocess.Popen(
        [sys.executable, "-c", STUCK_COMPILE, hanging_nvcc(tmp_path), how, str(tmp_path / "pids")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    return proc, wait_for_pids(tmp_path)


def test_ctrl_c_stops_a_compile_and_its_nvcc(tmp_path):
    import signal

    proc, pids = start_stuck(tmp_path, "main")
    try:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert out.strip() == "KeyboardInterrupt", err
    assert gone(pids)


def test_an_exiting_python_stops_a_compile_left_running(tmp_path):
    proc, pids = start_stuck(tmp_path, "thread")
    try:
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert gone(pids)


def test_a_killed_python_leaves_no_nvcc(tmp_path):
    import signal

    proc, (nvcc_pid, child_pid) = start_stuck(tmp_path, "main")
    proc.kill()  # SIGKILL: nothing in Python runs; the kernel ends nvcc (its parent died)
    proc.wait(timeout=30)
    try:
        assert gone([nvcc_pid])
    finally:
        try:
            os.kill(child_pid, signal.SIGKILL)  # what nvcc started outlives it (see the docs)
        except ProcessLookupError:
            pass


def test_the_nvcc_helpers_have_the_same_limits(tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("CUPLUG_COMPILE_TIMEOUT", "1")
    stuck = hanging_nvcc(tmp_path)
    with pytest.raises(drv.CompileError, match="did not finish within 1 s"):
        compiler.preprocess_source("int x;\n", [], stuck)
    assert gone(wait_for_pids(tmp_path, 1))
    # A relative nvcc works although preprocessing runs in a temp folder.
    real = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvcc").write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    (tmp_path / "bin" / "nvcc").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUPLUG_COMPILE_TIMEOUT", "600")
    assert "int x = 2;" in compiler.preprocess_source("#define T 2\nint x = T;\n", [], "bin/nvcc")
