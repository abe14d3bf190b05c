"""Issue 26, first use from several threads: eight threads making their first cuplug call at once
(an array, a compile, the plugin listing) with the `cuplug` logger at DEBUG never hang.

The deadlock this guards against: the plugin registry scanned its folders under its lock and
logged what it found through Python's logger; the logger's Python code let the GIL go to another
thread, which then waited for the registry's lock while holding the GIL. First use happens once
per process, so the test runs many fresh processes, each under a timeout; a switch interval of
one microsecond makes Python hand the GIL over at nearly every chance it gets.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
import textwrap

import pytest

RUNS = 100
PARALLEL = 4
TIMEOUT_S = 60

CHILD = textwrap.dedent(
    """
    import faulthandler, logging, sys, threading
    faulthandler.dump_traceback_later({timeout}, exit=True)  # a hang shows every thread's stack
    sys.setswitchinterval(1e-6)

    class Formatting(logging.Handler):
        def emit(self, record):
            self.format(record)  # Python code for every record: chances to let the GIL go

    log = logging.getLogger("cuplug")
    log.addHandler(Formatting())
    log.setLevel(logging.DEBUG)

    import cuplug
    import cuplug.compiler
    import cuplug.driver as drv
    import cuplug.plugins
    from cuplug import gpuarray

    GPU = {gpu}
    if GPU:
        drv.init()
        ctx = drv.Device(0).retain_primary_context()
    barrier = threading.Barrier(8)
    errors = []

    def work(i):
        if GPU:
            ctx.push()
        try:
            barrier.wait()
            if i % 4 == 0:
                assert cuplug.plugins.names("allocator")
            elif i % 4 == 1:
                cuplug.config.selected("rng").reason
            elif GPU and i % 4 == 2:
                assert gpuarray.zeros(4).get().tolist() == [0.0] * 4
            elif GPU:
                assert cuplug.compiler.compile("__global__ void k() {{}}", no_extern_c=True)
            else:
                assert cuplug.plugins.diagnostics()
        except BaseException as e:
            errors.append(repr(e))
        finally:
            if GPU:
                drv.Context.pop()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    faulthandler.cancel_dump_traceback_later()
    if errors:
        sys.exit("errors: " + "; ".join(errors))
    print("ok")
    """
)


def _run_once(env, gpu):
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD.format(timeout=TIMEOUT_S - 10, gpu=gpu)],
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as e:
        return f"hung for {TIMEOUT_S} s:\n{e.stderr or ''}"
    if proc.returncode != 0 or proc.stdout.strip() != "ok":
        return f"exit status {proc.returncode}:\n{proc.stderr[-6000:]}"
    return None


def _run_many(tmp_path, gpu, runs=RUNS, **env):
    full = dict(os.environ)
    full.update(CUPLUG_CACHE_DIR=str(tmp_path / "cache"), **env)
    runs = int(os.environ.get("CUPLUG_TEST_FIRST_USE_RUNS", runs))
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(lambda _: _run_once(full, gpu), range(runs)))
    failed = [r for r in results if r is not None]
    assert not failed, f"{len(failed)} of {runs} runs failed; the first:\n{failed[0]}"


def test_eight_threads_first_use_without_a_driver_never_hang(tmp_path):
    """The plugin scan and backend selection need no driver: CI without the fake one too."""
    _run_many(tmp_path, False, runs=RUNS // 2, CUPLUG_CUDA_DRIVER="/nonexistent/libcuda.so.1")


@pytest.mark.gpu
def test_eight_threads_first_use_never_hang(tmp_path, driver_mode):
    """An array, a compile and the plugin listing at once, on a context (the fake driver)."""
    _run_many(tmp_path, True)
