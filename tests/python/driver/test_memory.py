"""Device memory: DeviceAllocation, mem_alloc and its out-of-memory retry, pitched, managed and
IPC memory, PointerHolderBase, and what counts as a device pointer. IPC between processes needs
a real GPU: test_memory_gpu.py."""

import gc
import sys

import numpy as np
import pytest

import cuplug.driver as drv

pytestmark = pytest.mark.gpu

OOM = 2  # CUDA_ERROR_OUT_OF_MEMORY


def random_bytes(n, seed=0):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def test_mem_alloc_round_trip(ctx):
    data = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    a = drv.mem_alloc(data.nbytes)
    assert isinstance(a, drv.DeviceAllocation)
    assert a.size == data.nbytes
    assert int(a) != 0 and int(a) == a.__index__()
    drv.memcpy_htod(a, data)
    back = np.empty_like(data)
    drv.memcpy_dtoh(back, a)
    assert np.array_equal(back, data)
    assert hex(int(a)) in repr(a) and f"{data.nbytes} bytes" in repr(a)


def test_mem_alloc_accepts_numpy_ints_and_rejects_bad_sizes(ctx):
    assert drv.mem_alloc(np.int64(64)).size == 64
    with pytest.raises(ValueError, match="must not be negative"):
        drv.mem_alloc(-1)
    with pytest.raises(TypeError, match="must be an integer"):
        drv.mem_alloc(64.0)


def test_zero_byte_allocation(ctx):
    a = drv.mem_alloc(0)
    assert a.size == 0
    a.free()


def test_free_twice_raises_logic_error(ctx):
    a = drv.mem_alloc(256)
    assert not a.freed
    a.free()
    assert a.freed
    with pytest.raises(
        drv.LogicError, match="device_allocation::free failed: invalid resource handle"
    ):
        a.free()
    # A freed allocation never reaches a copy or a kernel as a dangling pointer.
    with pytest.raises(drv.LogicError, match="allocation was freed"):
        int(a)
    with pytest.raises(drv.LogicError, match="allocation was freed"):
        drv.memcpy_htod(a, b"x")


@pytest.mark.alone
def test_free_and_drop_return_memory(ctx):
    free_before, total = drv.mem_get_info()
    a = drv.mem_alloc(64 << 20)
    free_during, total_during = drv.mem_get_info()
    assert total_during == total
    assert free_during <= free_before - (64 << 20)
    a.free()
    assert drv.mem_get_info()[0] == free_before
    b = drv.mem_alloc(64 << 20)
    del b
    assert drv.mem_get_info()[0] == free_before


@pytest.mark.alone
def test_allocation_is_freed_under_its_own_context(ctx):
    if drv.Device.count() < 2:
        pytest.skip("needs two devices")
    free_before = drv.mem_get_info()[0]
    a = drv.mem_alloc(1 << 20)
    assert drv.mem_get_info()[0] < free_before
    drv.Context.pop()
    try:
        other = drv.Device(1).make_context()
        try:
            a.free()  # pushes its own context for the free, then restores this one
            assert drv.Context.get_current() == other
        finally:
            drv.Context.pop()
    finally:
        ctx.push()
    # All of it back (the driver counts in 2 MiB pages: a 1 MiB allocation showed as 2 MiB less
    # free on an H200 with two GPUs, 2026-11-28).
    assert drv.mem_get_info()[0] == free_before


def test_out_of_memory_retries_after_gc(ctx, fake):
    collections = []

    def on_gc(phase, info):
        if phase == "start":
            collections.append(info)

    gc.callbacks.append(on_gc)
    try:
        fake.fail_next("cuMemAlloc", OOM, count=1)
        a = drv.mem_alloc(4096)
    finally:
        gc.callbacks.remove(on_gc)
    assert a.size == 4096
    assert collections, "mem_alloc did not run gc.collect() before retrying"


def test_out_of_memory_twice_raises_memory_error_naming_size(ctx, fake):
    fake.fail_next("cuMemAlloc", OOM, count=2)
    with pytest.raises(drv.MemoryError, match="out of memory") as info:
        drv.mem_alloc(123456)
    assert "123456" in str(info.value)
    assert isinstance(info.value, drv.Error)
    # The process stays usable.
    assert drv.mem_alloc(16).size == 16


def test_really_too_large_allocation(ctx):
    with pytest.raises(drv.MemoryError, match=str(1 << 50)):
        drv.mem_alloc(1 << 50)


def test_mem_alloc_keeps_its_stream_alive(ctx):
    s = drv.Stream()
    refs = sys.getrefcount(s)
    a = drv.mem_alloc(1024, stream=s)
    assert sys.getrefcount(s) == refs + 1
    a.free()
    assert sys.getrefcount(s) == refs
    b = drv.mem_alloc(1024, s)
    del b
    assert sys.getrefcount(s) == refs


def test_backend_name(ctx):
    assert drv.mem_alloc(16).backend == "device"
    assert drv.mem_alloc_pitch(16, 4, 4)[0].backend is None


def test_mem_alloc_pitch(ctx):
    a, pitch = drv.mem_alloc_pitch(100, 7, 4)
    assert pitch >= 100 and pitch % 4 == 0
    assert a.size == pitch * 7
    data = random_bytes(pitch * 7)
    drv.memcpy_htod(a, data)
    back = np.empty_like(data)
    drv.memcpy_dtoh(back, a)
    assert np.array_equal(back, data)


def test_mem_get_address_range(ctx):
    a = drv.mem_alloc(1000)
    assert drv.mem_get_address_range(a) == (int(a), 1000)
    assert drv.mem_get_address_range(int(a) + 123) == (int(a), 1000)


def test_mem_get_info_needs_a_context():
    with pytest.raises(drv.LogicError, match="cuMemGetInfo failed"):
        drv.mem_get_info()


def test_mem_alloc_needs_a_context():
    with pytest.raises(drv.LogicError, match="no currently active context"):
        drv.mem_alloc(16)


# ---- pointer conversion ----------------------------------------------------------------------


class ArrayInterface:
    def __init__(self, ptr):
        self.__cuda_array_interface__ = {
            "shape": (1,),
            "typestr": "<f4",
            "data": (ptr, False),
            "version": 3,
        }

    def __int__(self):  # a one-element array's *value*: must not be taken as the address
        return 7


class HasGpudata:
    def __init__(self, gpudata):
        self.gpudata = gpudata


class Indexable:
    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


def test_everything_that_is_a_device_pointer(ctx):
    a = drv.mem_alloc(64)
    data = random_bytes(16, seed=3)
    for dest in (
        a,
        int(a),
        np.uint64(int(a)),
        ArrayInterface(int(a)),
        HasGpudata(a),
        HasGpudata(int(a)),
        Indexable(int(a)),
    ):
        drv.memset_d8(a, 0, 64)
        drv.memcpy_htod(dest, data)
        back = np.empty(16, np.uint8)
        drv.memcpy_dtoh(back, a)
        assert np.array_equal(back, data), type(dest)


def test_pointer_offsets(ctx):
    a = drv.mem_alloc(64)
    drv.memset_d8(a, 0, 64)
    drv.memcpy_htod(int(a) + 10, b"\x01\x02\x03")
    back = np.empty(64, np.uint8)
    drv.memcpy_dtoh(back, a)
    assert list(back[9:14]) == [0, 1, 2, 3, 0]


def test_what_is_not_a_device_pointer(ctx):
    with pytest.raises(TypeError, match="'float' as a device pointer"):
        drv.memset_d8(1.5, 0, 1)
    with pytest.raises(TypeError, match="'str' as a device pointer"):
        drv.memset_d8("0x1000", 0, 1)
    with pytest.raises(TypeError, match="'numpy.ndarray' as a device pointer"):
        drv.memset_d8(np.array([5], np.uint64), 0, 1)
    with pytest.raises(ValueError, match="must be an address"):
        drv.memset_d8(-8, 0, 1)


# ---- PointerHolderBase ------------------------------------------------------------------------


class Holder(drv.PointerHolderBase):
    def __init__(self, alloc):
        super().__init__()
        self.alloc = alloc

    def get_pointer(self):
        return int(self.alloc)


def test_pointer_holder_base(ctx):
    a = drv.mem_alloc(32)
    h = Holder(a)
    assert int(h) == int(a) == h.get_pointer()
    data = random_bytes(32, seed=4)
    drv.memcpy_htod(h, data)
    back = np.empty(32, np.uint8)
    drv.memcpy_dtoh(back, h)
    assert np.array_equal(back, data)


def test_pointer_holder_base_misuse(ctx):
    class NoOverride(drv.PointerHolderBase):
        pass

    with pytest.raises(TypeError, match="must override get_pointer"):
        int(NoOverride())

    class NoSuperInit(drv.PointerHolderBase):
        def __init__(self):
            pass

        def get_pointer(self):
            return 0

    with pytest.raises(TypeError, match="__init__"):
        NoSuperInit()


# ---- managed memory and as_buffer ---------------------------------------------------------------


def test_managed_allocation_as_buffer(ctx):
    m = drv.mem_alloc_managed(64)
    assert isinstance(m, drv.ManagedAllocation) and isinstance(m, drv.DeviceAllocation)
    assert m.get_device_pointer() == int(m)
    view = m.as_buffer(16, offset=8)
    assert view.nbytes == 16 and not view.readonly
    view[:] = bytes(range(16))
    back = np.empty(64, np.uint8)
    drv.memcpy_dtoh(back, m)
    assert list(back[8:24]) == list(range(16))
    del m
    gc.collect()
    assert bytes(view[:4]) == bytes(range(4))  # the view keeps its allocation alive


def test_as_buffer_bounds(ctx):
    a = drv.mem_alloc(64)
    with pytest.raises(ValueError, match="exceed the allocation of 64 bytes"):
        a.as_buffer(60, offset=8)


def test_managed_attach(ctx):
    m = drv.mem_alloc_managed(64, drv.mem_attach_flags.GLOBAL)
    s = drv.Stream()
    m.attach(drv.mem_attach_flags.SINGLE, s)
    m.attach(drv.mem_attach_flags.GLOBAL)
    m.free()
    with pytest.raises(drv.LogicError):
        m.attach(drv.mem_attach_flags.GLOBAL)


# ---- IPC ----------------------------------------------------------------------------------------


def test_ipc_handle_round_trip(ctx, fake):
    # The real driver refuses to open a handle in the process that made it; the fake can allow it.
    fake.set_ipc_in_process(True)
    try:
        a = drv.mem_alloc(256)
        data = random_bytes(256, seed=5)
        drv.memcpy_htod(a, data)
        handle = drv.mem_get_ipc_handle(a)
        assert isinstance(handle, bytearray) and len(handle) == 64
        opened = drv.IPCMemoryHandle(handle)
        assert int(opened) != int(a)  # a second mapping of the same memory
        back = np.empty(256, np.uint8)
        drv.memcpy_dtoh(back, opened)
        assert np.array_equal(back, data)
        opened.close()
        with pytest.raises(
            drv.LogicError, match="ipc_mem_handle::close failed: invalid resource handle"
        ):
            opened.close()
        with pytest.raises(drv.LogicError, match="handle was closed"):
            int(opened)
        # Flags pass through, as the enum or a plain int; dropping the handle closes it.
        again = drv.IPCMemoryHandle(bytes(handle), drv.ipc_mem_flags.LAZY_ENABLE_PEER_ACCESS)
        drv.memcpy_dtoh(back, again)
        assert np.array_equal(back, data)
        mapping = int(again)
        assert drv.mem_get_address_range(mapping) == (mapping, 256)
        del again
        gc.collect()
        with pytest.raises(drv.LogicError, match="cuMemGetAddressRange failed"):
            drv.mem_get_address_range(mapping)  # unmapped when the handle was dropped
    finally:
        fake.set_ipc_in_process(False)


def test_ipc_handle_of_own_process_is_refused_like_the_real_driver(ctx, fake):
    handle = drv.mem_get_ipc_handle(drv.mem_alloc(64))
    with pytest.raises(drv.LogicError, match="cuIpcOpenMemHandle failed"):
        drv.IPCMemoryHandle(handle)


def test_ipc_handle_wrong_size(ctx):
    with pytest.raises(ValueError, match="64 bytes, got 10"):
        drv.IPCMemoryHandle(bytearray(10))


SHORT_LIVED_CONTEXTS = """
import gc
import numpy as np
import cuplug.driver as drv
from cuplug import gpuarray
drv.init()
keep = []
for k in range(3):
    with drv.Device(0).retain_primary_context():
        keep.append(gpuarray.to_gpu(np.full(4096, k, np.float32)))
while keep:
    keep.pop()
    gc.collect()
print("freed")
"""


def test_arrays_made_under_short_lived_context_objects_free_quietly():
    """Each retain_primary_context() call makes a Context object. Arrays made under several,
    each dropped after its block (a Dask worker's tasks did this), free without errors: the pool
    they share may by then have been let go by its context's table, so its last owner, the last
    array, destroys it, and what it holds goes back to the driver under the array's context.
    In a process of its own: another live Context object of that context would hide it."""
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-c", SHORT_LIVED_CONTEXTS], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "freed", proc.stderr
    assert "failed to free" not in proc.stderr, proc.stderr


def test_memory_of_a_detached_context_is_dropped_quietly(capfd):
    drv.init()
    c = drv.Device(0).make_context()
    a = drv.mem_alloc(1024)
    pinned = drv.pagelocked_empty(16, np.uint8)
    drv.Context.pop()
    c.detach()  # destroys the context, and the memory with it
    a.free()  # nothing left to free: no error, no warning
    del pinned
    gc.collect()
    assert capfd.readouterr().err == ""
    with pytest.raises(drv.LogicError):
        a.free()
