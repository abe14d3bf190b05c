"""PyCUDA's memory pools: DeviceMemoryPool, PageLockedMemoryPool and the pooled allocations
(spec §1.12, §13.5): allocators of a pool backend ("pool", the pool kit's algorithm, unless
another is named) created through the registry over the pool's upstream."""

import gc
import os
import random

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug._driver import pools as _pools

pytestmark = pytest.mark.gpu

OOM = 2  # CUDA_ERROR_OUT_OF_MEMORY
DMP = _pools.DeviceMemoryPool


def test_pool_names_match_pycuda():
    for name in (
        "DeviceMemoryPool",
        "PageLockedMemoryPool",
        "PageLockedAllocator",
        "PooledDeviceAllocation",
        "PooledHostAllocation",
        "bitlog2",
    ):
        assert getattr(_pools, name) is getattr(drv, name)


def test_bitlog2():
    assert [_pools.bitlog2(n) for n in (0, 1, 2, 3, 4, 1023, 1024)] == [0, 0, 1, 1, 2, 9, 10]
    assert _pools.bitlog2(2**63) == 63
    with pytest.raises(ValueError):
        _pools.bitlog2(-1)


def test_bins_fit_their_sizes():
    # PyCUDA's test_mempool_2, with this pool's tighter bound (round up, < 1/16 overhead).
    rng = random.Random(1)
    for _ in range(20000):
        size = rng.randrange(1 << 31) >> rng.randrange(32)
        bin_nr = DMP.bin_number(size)
        asize = DMP.alloc_size(bin_nr)
        assert asize >= size
        assert DMP.bin_number(asize) == bin_nr
        if size:
            assert asize - size <= size // 16
    assert DMP.alloc_size(DMP.bin_number(1 << 20)) == 1 << 20  # PyCUDA: 1 MiB + 64 KiB - 1
    assert DMP.alloc_size(DMP.bin_number(5 << 30)) == 5 << 30  # beyond 4 GiB (pycuda#282)
    with pytest.raises(ValueError, match="out of range"):
        DMP.alloc_size(1 << 20)


def test_blocks_are_reused_and_counted(ctx):
    pool = DMP()
    a = pool.allocate(1000)
    assert (pool.active_blocks, pool.held_blocks) == (1, 0)
    assert pool.active_bytes == 1000
    assert pool.managed_bytes == DMP.alloc_size(DMP.bin_number(1000))
    address = int(a)
    a.free()
    assert (pool.active_blocks, pool.held_blocks) == (0, 1)
    assert pool.active_bytes == 0
    b = pool.allocate(1010)  # same size class: the same block
    assert int(b) == address
    assert pool.held_blocks == 0
    del b
    assert pool.held_blocks == 1
    assert pool.free_held() == DMP.alloc_size(DMP.bin_number(1000))
    assert (pool.held_blocks, pool.managed_bytes) == (0, 0)


def test_pooled_allocation_is_a_device_allocation(ctx):
    pool = DMP()
    data = np.arange(1000, dtype=np.float32)
    a = pool.allocate(data.nbytes)
    assert isinstance(a, drv.DeviceAllocation)
    assert isinstance(a, drv.PooledDeviceAllocation)
    assert len(a) == data.nbytes and a.size == data.nbytes
    assert int(a) == a.__index__() != 0
    assert "PooledDeviceAllocation" in repr(a) and hex(int(a)) in repr(a)
    drv.memcpy_htod(a, data)  # accepted wherever a DeviceAllocation is
    back = np.empty_like(data)
    drv.memcpy_dtoh(back, a)
    assert np.array_equal(back, data)
    a.free()
    assert "freed" in repr(a)
    with pytest.raises(
        drv.LogicError, match="pooled_device_allocation::free failed: invalid resource handle"
    ):
        a.free()


def test_pool_allocate_is_an_allocator_callable(ctx):
    pool = DMP()
    for allocator in (pool.allocate, pool):
        a = allocator(4096)
        assert isinstance(a, drv.DeviceAllocation) and a.size == 4096
        a.free()
    with pytest.raises(ValueError):
        pool.allocate(-1)
    with pytest.raises(TypeError, match="must be an integer"):
        pool.allocate(1.5)
    assert pool.allocate(np.int64(64)).size == 64


def test_allocate_takes_pycudas_arguments_and_names_bad_ones(ctx):
    pool = DMP()
    s = drv.Stream()
    for a in (pool.allocate(size=64), pool.allocate(64, s), pool(size=64, stream=s)):
        assert a.size == 64
        a.free()
    with pytest.raises(TypeError, match="missing required argument 'size'"):
        pool.allocate()
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        pool.allocate(64, size=64)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nbytes'"):
        pool.allocate(nbytes=64)
    with pytest.raises(TypeError, match="takes \\(size, stream=None\\), got 3"):
        pool.allocate(64, None, None)
    with pytest.raises(TypeError):
        DMP.allocate(object(), 64)  # not a pool
    a = pool.allocate(64)
    with pytest.raises(TypeError):
        drv.PooledDeviceAllocation.free(object())
    a.free()
    s.synchronize()


def test_pycuda_mempool_queue(ctx):
    # PyCUDA's test_mempool: a sliding queue of allocations, then stop_holding().
    pool = DMP()
    queue = []
    for e in range(5, 20):
        for _ in range(20):
            queue.append(pool.allocate(1 << e))
            if len(queue) > 10:
                queue.pop(0)
    assert pool.active_blocks == 10
    del queue
    assert pool.active_blocks == 0
    assert pool.held_blocks > 0
    pool.stop_holding()
    assert pool.held_blocks == 0
    a = pool.allocate(100)
    a.free()
    assert pool.held_blocks == 0  # no longer holding
    assert pool.managed_bytes == 0


def test_stream_ordered_allocations(ctx):
    pool = DMP()
    s = drv.Stream()
    a = pool.allocate(1 << 16, stream=s)
    address = int(a)
    a.free()
    b = pool.allocate(1 << 16, stream=s)  # the same stream reuses at once
    assert int(b) == address
    b.free()
    c = pool.allocate(1 << 16)  # another stream waits for s's work, then reuses
    assert int(c) == address
    c.free()
    s.synchronize()
    pool.free_held()


def test_no_leak_against_the_driver(ctx, fake):
    before = fake.device_bytes_in_use()
    pool = DMP()
    blocks = [pool.allocate(n) for n in (10, 1000, 1 << 20, 3 << 20)]
    assert fake.device_bytes_in_use() > before
    del blocks
    pool.free_held()
    assert fake.device_bytes_in_use() == before


def test_out_of_memory_frees_held_blocks_and_retries(ctx, fake):
    pool = DMP()
    held = pool.allocate(1 << 20)
    held.free()
    assert pool.held_blocks == 1
    fake.fail_next("cuMemAlloc", OOM)  # the first try fails; the held block is released
    a = pool.allocate(3 << 20)
    assert pool.held_blocks == 0
    a.free()


def test_out_of_memory_runs_the_garbage_collector(ctx, fake):
    pool = DMP()

    class Cycle:
        pass

    c = Cycle()
    c.self = c
    c.block = pool.allocate(1 << 20)
    address = int(c.block)
    gc.disable()
    try:
        del c  # unreachable, but only the collector knows
        fake.fail_next("cuMemAlloc", OOM)
        b = pool.allocate(1 << 20)
        assert int(b) == address  # the collected block was handed out again
    finally:
        gc.enable()
    b.free()


def test_out_of_memory_error_says_what_the_pool_knew(ctx, fake):
    pool = DMP()
    keep = pool.allocate(5000)
    fake.fail_next("cuMemAlloc", OOM, count=10)
    with pytest.raises(drv.MemoryError) as info:
        pool.allocate(123456)
    message = str(info.value)
    assert message.startswith("memory_pool::allocate failed: out of memory")
    assert "requested 123456 bytes; in use 5000, held 0" in message
    assert "failed to free memory for allocation" in message
    fake.clear_faults()
    pool.allocate(123456).free()  # usable afterwards
    keep.free()


def test_set_trace_prints_pool_events(ctx, capfd):
    pool = DMP()
    pool.set_trace(True)
    a = pool.allocate(100)
    a.free()
    pool.allocate(100).free()
    pool.set_trace(False)
    pool.allocate(100).free()
    out = capfd.readouterr().out.splitlines()
    assert out == [
        "[pool] allocation of size 100 required new memory",
        f"[pool] block of size 100 returned to bin {DMP.bin_number(100)} which now contains 1 "
        "entries",
        f"[pool] allocation of size 100 served from bin {DMP.bin_number(100)} which contained 1 "
        "entries",
        f"[pool] block of size 100 returned to bin {DMP.bin_number(100)} which now contains 1 "
        "entries",
    ]


def test_allocations_outlive_their_pool(ctx, fake):
    before = fake.device_bytes_in_use()
    pool = DMP()
    a = pool.allocate(1 << 20)
    b = pool.allocate(1 << 20)
    b.free()
    del pool  # frees what it holds; a's block goes straight back when a goes
    a.free()
    gc.collect()
    assert fake.device_bytes_in_use() == before


def test_pool_needs_a_context():
    drv.init()
    if drv.Context.get_current() is not None:
        pytest.skip("a context is current on this thread")
    with pytest.raises(drv.LogicError, match="no currently active context"):
        DMP()


def test_pool_over_a_named_upstream(ctx):
    pool = DMP(upstream="async")
    a = pool.allocate(1 << 20)
    assert pool.stats()["bytes_in_use"] == 1 << 20
    a.free()
    assert pool.stats()["bytes_held"] == 1 << 20
    with pytest.raises(drv.ConfigError, match="nosuch"):
        DMP(upstream="nosuch")
    with pytest.raises(TypeError, match="backend name or a cuplug.memory.Allocator, got int"):
        DMP(upstream=3)


def exact_pool_plugin():
    """The test pool plugin of tests/cpp/pool ("exact_pool": reuses a block only for a request
    of exactly its size), loaded once."""
    build = os.environ.get("CUPLUG_BUILD_DIR")
    path = os.path.join(build or "", "tests", "pool_plugins", "libexact_pool.so")
    if not build or not os.path.exists(path):
        pytest.skip(f"test plugin {path} not built (set CUPLUG_BUILD_DIR to the build folder)")
    import cuplug.plugins

    cuplug.plugins.load(path)
    return "exact_pool"


def test_another_pool_backend_changes_what_the_pool_does(ctx):
    kit = DMP()
    a = kit.allocate(1000)
    address = int(a)
    a.free()
    b = kit.allocate(1010)  # the kit's size classes: the same block
    assert int(b) == address
    b.free()

    exact = DMP(backend=exact_pool_plugin())
    a = exact.allocate(1000)
    address = int(a)
    a.free()
    assert (exact.held_blocks, exact.active_blocks) == (1, 0)  # the plugin's own counters
    b = exact.allocate(1010)  # no size classes: a new block
    assert int(b) != address
    assert (exact.held_blocks, exact.active_blocks, exact.active_bytes) == (1, 1, 1010)
    c = exact.allocate(1000)  # exactly the size freed: reused
    assert int(c) == address
    assert isinstance(c, drv.PooledDeviceAllocation)
    b.free()
    c.free()
    assert exact.free_held() == 2010
    assert exact.managed_bytes == 0
    exact.stop_holding()
    exact.allocate(64).free()
    assert exact.held_blocks == 0


@pytest.fixture
def plugin_options():
    """cuplug.config.set_options, undone after the test."""
    import cuplug.config

    state = cuplug.config.snapshot()
    yield cuplug.config.set_options
    cuplug.config.restore(state)


def test_the_pool_backend_must_be_a_pool_over_an_upstream(ctx, plugin_options):
    plugin_options("allocator", "limiting", {"limit": "1GiB"})
    with pytest.raises(drv.ConfigError, match="'limiting' is not a pool: it keeps no pool stat"):
        DMP(backend="limiting")
    with pytest.raises(drv.ConfigError, match="is not an allocator adaptor"):
        DMP(backend="device")
    with pytest.raises(drv.ConfigError, match="unknown allocator 'nosuch'"):
        DMP(backend="nosuch")
    assert DMP(backend="pool").allocate(10).size == 10


def test_the_pool_backend_is_made_with_its_configured_options(ctx, plugin_options, capfd):
    plugin_options("allocator", "pool", {"trace": True})
    DMP().allocate(100).free()
    assert "[pool] allocation of size 100 required new memory" in capfd.readouterr().out
    # The upstream is the pool's own: a configured `upstream` option does not replace it.
    plugin_options("allocator", "pool", {"upstream": "host"})
    pool = DMP()
    a = pool.allocate(1 << 20)
    assert pool.stats()["bytes_in_use"] == 1 << 20
    drv.memcpy_htod(a, np.zeros(1 << 18, np.float32))  # device memory, not host memory
    a.free()


def test_page_locked_pool_on_another_backend(ctx, fake):
    pool = drv.PageLockedMemoryPool(backend=exact_pool_plugin())
    before = fake.live_host_allocations()
    a = pool.allocate((10,), np.float64)
    address = a.ctypes.data
    del a
    assert pool.held_blocks == 1
    assert pool.allocate((80,), np.uint8).ctypes.data == address  # 80 bytes: exactly the same
    pool.stop_holding()
    assert fake.live_host_allocations() == before


def test_debug_memory_pool_reports(ctx):
    import io

    log = io.StringIO()
    pool = _pools.DebugMemoryPool(interactive=False, logfile=log)
    keep = [pool.allocate(256), pool(512)]
    report = log.getvalue()
    assert "Allocation of size 256 occurring" in report
    assert "Allocation of size 512 occurring" in report
    assert "(256 bytes): 1x" in report  # the histogram of live blocks at the second allocation
    assert all(isinstance(a, drv.PooledDeviceAllocation) for a in keep)


def test_page_locked_pool(ctx):
    pool = drv.PageLockedMemoryPool()
    a = pool.allocate((10, 20), np.float32)
    assert a.shape == (10, 20) and a.dtype == np.float32 and a.flags.c_contiguous
    assert isinstance(a.base, drv.PooledHostAllocation)
    assert len(a.base) == 800
    a[:] = 7
    assert a.sum() == 1400
    f = pool.allocate([3, 4], "int16", order="F")
    assert f.flags.f_contiguous and f.strides == (2, 6)
    address = a.ctypes.data
    del a
    assert pool.held_blocks == 1
    b = pool.allocate((800,), np.uint8)
    assert b.ctypes.data == address
    b.base.free()
    with pytest.raises(drv.LogicError, match="pooled_host_allocation::free"):
        b.base.free()
    with pytest.raises(ValueError, match="unrecognized order"):
        pool.allocate((2,), np.float32, order="K")
    assert pool.allocate((0,), np.float32).size == 0
    del f
    assert pool.free_held() > 0
    assert pool.held_blocks == 0


def test_page_locked_pool_refuses_python_objects(ctx, fake):
    pool = drv.PageLockedMemoryPool()
    before = fake.live_host_allocations()
    for dtype in (object, [("n", np.int32), ("o", object)]):
        with pytest.raises(
            TypeError, match="PageLockedMemoryPool.allocate: the array holds Python objects"
        ):
            pool.allocate((4,), dtype)
    assert fake.live_host_allocations() == before and pool.held_blocks == 0


def test_page_locked_allocator_flags(ctx, fake):
    alloc = drv.PageLockedAllocator(drv.host_alloc_flags.DEVICEMAP)
    assert alloc.flags == drv.host_alloc_flags.DEVICEMAP
    pool = drv.PageLockedMemoryPool(alloc)
    before = fake.live_host_allocations()
    a = pool.allocate((1000,), np.float64)
    assert fake.live_host_allocations() == before + 1
    del a
    pool.stop_holding()
    assert fake.live_host_allocations() == before
    with pytest.raises(drv.ConfigError, match="PageLockedAllocator: flags is 64, expected"):
        drv.PageLockedAllocator(64)
