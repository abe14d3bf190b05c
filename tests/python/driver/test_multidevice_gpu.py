"""Several devices in one process, on a machine with two GPUs or more (skips with fewer): kernels
and random numbers run on each device, strided and large arrays copy exactly between devices, one
thread drives every GPU, the NCCL example all-reduces cuplug arrays and the Dask example hands
them between one worker process per GPU. What the fake driver's two devices can show is
test_multidevice.py's (and test_multidevice_dask.py's)."""

import numpy as np
import pytest
from test_multidevice import on

import cuplug.driver as drv
from cuplug import gpuarray

pytestmark = [pytest.mark.gpu, pytest.mark.real_gpu]


def test_kernels_run_on_each_device(two):
    for ctx in two:
        with ctx:
            x = gpuarray.to_gpu(np.arange(1000, dtype=np.float32))
            np.testing.assert_array_equal((x * 2 + 1).get(), np.arange(1000) * 2 + 1)
            assert float(gpuarray.sum(x).get()) == float(np.arange(1000).sum())


def test_strided_arrays_copy_between_devices(two):
    c0, c1 = two
    host = np.arange(60, dtype=np.float32).reshape(6, 10)
    a = on(c0, host)
    b = a[::2, 1::3].copy_to(1)
    with c1:
        np.testing.assert_array_equal(b.get(), host[::2, 1::3])


def test_random_numbers_land_on_the_current_device(two):
    from cuplug import random

    _, c1 = two
    with c1:
        values = random.Generator(seed=3).uniform(size=1000, dtype=np.float32)
        assert values.device == drv.Device(1)
        host = values.get()
    assert ((host >= 0) & (host < 1)).all()


def test_every_gpu_runs_its_part_from_one_thread(two):
    contexts = [drv.Device(i).retain_primary_context() for i in range(drv.Device.count())]
    host = np.arange(1 << 20, dtype=np.float32)
    parts = []
    for i, ctx in enumerate(contexts):
        with ctx:
            parts.append((ctx, gpuarray.to_gpu(host) * (i + 1)))  # queued, not waited for
    for i, (ctx, part) in enumerate(parts):
        with ctx:
            assert part.device == drv.Device(i)
            np.testing.assert_array_equal(part.get(), host * (i + 1))


def test_peer_copies_of_large_arrays_are_exact(two):
    c0, c1 = two
    host = np.random.default_rng(0).random(1 << 22)
    a = on(c0, host)
    b = a.copy_to(c1)
    back = b.copy_to(c0)
    with c0:
        np.testing.assert_array_equal(back.get(), host)


def _run_example(name, tmp_path):
    """examples/multigpu/<name> in a fresh process with no config and its own kernel cache; skips
    with the example's own last line when it says the GPU was not used."""
    import os

    from support.examples import EXAMPLES, run

    proc = run(
        os.path.join(EXAMPLES, "multigpu", name),
        CUPLUG_CONFIG="",
        HOME=str(tmp_path),
        CUPLUG_CACHE_DIR=str(tmp_path / "cache"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if "GPU not used" in proc.stdout:
        pytest.skip(proc.stdout.strip().splitlines()[-1])
    return proc


def test_nccl_example_all_reduces_cuplug_arrays_on_every_gpu(two, tmp_path):
    proc = _run_example("nccl_allreduce.py", tmp_path)
    count = drv.Device.count()
    assert f"OK on {count} GPU(s), zero copies" in proc.stdout, proc.stdout


def test_dask_example_hands_arrays_between_gpu_workers(two, tmp_path):
    """examples/multigpu/dask_workers.py on every GPU: one worker process per GPU, kernels and
    reductions on each, arrays handed from worker to worker, every number checked against NumPy
    (the example's own check), then the same work on one GPU for the time."""
    proc = _run_example("dask_workers.py", tmp_path)
    print(proc.stdout)  # tools/gpu_check.sh puts its last line in the summary (pytest -rP)
    count = drv.Device.count()
    lines = proc.stdout.splitlines()
    assert any(line.startswith(f"{count} GPU(s) (") for line in lines), proc.stdout
    assert lines[-1].startswith(f"{count} GPUs vs 1: ") and lines[-1].endswith(": OK"), proc.stdout
