"""Host memory as NumPy arrays: page-locked, aligned, managed and registered arrays."""

import gc
import sys

import numpy as np
import pytest

import cuplug.driver as drv

pytestmark = pytest.mark.gpu


def address(ary):
    return ary.__array_interface__["data"][0]


# ---- page-locked ------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["C", "F"])
def test_pagelocked_empty_layout(ctx, order):
    a = drv.pagelocked_empty((3, 5), np.float64, order)
    assert a.shape == (3, 5) and a.dtype == np.float64
    assert a.flags.c_contiguous if order == "C" else a.flags.f_contiguous
    assert a.flags.writeable
    assert isinstance(a.base, drv.PagelockedHostAllocation)
    assert isinstance(a.base, drv.HostPointer)
    assert drv.HostAllocation is drv.PagelockedHostAllocation
    assert a.base.size == a.nbytes
    a[:] = np.arange(15).reshape(3, 5)
    assert a[2, 4] == 14


def test_pagelocked_shapes_and_dtypes(ctx):
    assert drv.pagelocked_empty(7, np.int16).shape == (7,)
    assert drv.pagelocked_empty(np.int64(4), "u1").shape == (4,)
    assert drv.pagelocked_empty([2, 3, 4], np.complex64).shape == (2, 3, 4)
    assert drv.pagelocked_empty((), np.float32).shape == ()
    empty = drv.pagelocked_empty((0, 3), np.float32)
    assert empty.size == 0 and isinstance(empty.base, drv.PagelockedHostAllocation)


def test_pagelocked_bad_arguments(ctx):
    with pytest.raises(drv.LogicError, match="unrecognized order specifier"):
        drv.pagelocked_empty(4, np.float32, order="A")
    with pytest.raises(TypeError, match="order must be 'C' or 'F'"):
        drv.pagelocked_empty(4, np.float32, order=5)
    with pytest.raises(ValueError, match="negative dimensions"):
        drv.pagelocked_empty((2, -1), np.float32)
    with pytest.raises(TypeError, match="shape entries must be integers"):
        drv.pagelocked_empty((2.5,), np.float32)
    with pytest.raises(TypeError, match="Python objects"):
        drv.pagelocked_empty(3, object)
    with pytest.raises(TypeError):
        drv.pagelocked_empty(3, "not a dtype")


def test_pagelocked_zeros_and_like(ctx):
    z = drv.pagelocked_zeros((4, 4), np.int32, mem_flags=drv.host_alloc_flags.PORTABLE)
    assert not z.any()
    src = np.asfortranarray(np.ones((3, 2), np.float32))
    like = drv.pagelocked_empty_like(src)
    assert like.shape == (3, 2) and like.dtype == np.float32 and like.flags.f_contiguous
    zl = drv.pagelocked_zeros_like(np.ones((2, 2)))
    assert zl.flags.c_contiguous and not zl.any()
    with pytest.raises(ValueError, match="could not detect array order"):
        drv.pagelocked_empty_like(np.ones((4, 4))[:, ::2])


def test_pagelocked_flags_free_and_device_pointer(ctx):
    a = drv.pagelocked_empty(16, np.uint8, mem_flags=drv.host_alloc_flags.DEVICEMAP)
    assert a.base.get_flags() & drv.host_alloc_flags.DEVICEMAP
    assert a.base.get_device_pointer() != 0
    a.base.free()
    with pytest.raises(
        drv.LogicError, match="host_allocation::free failed: invalid resource handle"
    ):
        a.base.free()


def test_pagelocked_memory_is_released_with_the_array(ctx, fake):
    before = fake.live_host_allocations()
    a = drv.pagelocked_empty(1 << 16, np.uint8)
    assert fake.live_host_allocations() == before + 1
    view = a[10:20]
    del a
    gc.collect()
    assert fake.live_host_allocations() == before + 1  # a view keeps the memory
    del view
    gc.collect()
    assert fake.live_host_allocations() == before


def test_pagelocked_async_round_trip(ctx):
    data = np.random.default_rng(0).standard_normal((64, 3))
    host = drv.pagelocked_empty_like(data)
    host[:] = data
    dev = drv.mem_alloc(data.nbytes)
    s = drv.Stream()
    drv.memcpy_htod_async(dev, host, s)
    out = drv.pagelocked_zeros_like(data)
    drv.memcpy_dtoh_async(out, dev, s)
    s.synchronize()
    assert np.array_equal(out, data)


# ---- aligned ----------------------------------------------------------------------------------


@pytest.mark.parametrize("alignment", [4096, 64, 1000])
def test_aligned_empty(alignment):
    a = drv.aligned_empty((10, 3), np.float32, alignment=alignment)
    assert address(a) % alignment == 0
    assert isinstance(a.base, drv.AlignedHostAllocation)
    a[:] = 1
    z = drv.aligned_zeros(100, np.int8, "F", alignment)
    assert address(z) % alignment == 0 and not z.any()


def test_aligned_like_and_free():
    src = np.ones((5, 7), np.int16, order="F")
    a = drv.aligned_empty_like(src)
    assert a.flags.f_contiguous and address(a) % 4096 == 0
    z = drv.aligned_zeros_like(src, alignment=256)
    assert address(z) % 256 == 0 and not z.any()
    a.base.free()
    with pytest.raises(drv.LogicError, match="invalid resource handle"):
        a.base.free()
    with pytest.raises(ValueError, match="alignment must be positive"):
        drv.aligned_empty(4, np.float32, alignment=0)


# ---- managed ----------------------------------------------------------------------------------


def test_managed_arrays(ctx):
    m = drv.managed_zeros((8, 8), np.float32, mem_flags=drv.mem_attach_flags.GLOBAL)
    assert isinstance(m.base, drv.ManagedAllocation)
    assert not m.any()
    m[:] = np.arange(64, dtype=np.float32).reshape(8, 8)
    back = np.empty_like(m)
    drv.memcpy_dtoh(back, m.base)
    assert np.array_equal(back, m)
    assert int(m.base) == address(m)

    e = drv.managed_empty(5, np.int32)  # PyCUDA's default mem_flags=0 works (means GLOBAL)
    assert e.shape == (5,)
    like = drv.managed_empty_like(np.ones((2, 3), order="F"))
    assert like.flags.f_contiguous and isinstance(like.base, drv.ManagedAllocation)
    zl = drv.managed_zeros_like(np.ones(4, np.uint16))
    assert zl.dtype == np.uint16 and not zl.any()


# ---- registered -------------------------------------------------------------------------------


def test_register_host_memory(ctx):
    original = np.random.default_rng(2).standard_normal((16, 4))
    refs = sys.getrefcount(original)
    reg = drv.register_host_memory(original, drv.mem_host_register_flags.DEVICEMAP)
    assert reg is not original
    assert isinstance(reg.base, drv.RegisteredHostMemory)
    assert reg.base.base is original
    assert sys.getrefcount(original) == refs + 1
    assert address(reg) == address(original) and reg.shape == original.shape
    reg[0, 0] = 42.0
    assert original[0, 0] == 42.0
    assert reg.base.get_device_pointer() != 0
    dev = drv.mem_alloc(reg.nbytes)
    drv.memcpy_htod_async(dev, reg)
    back = np.empty_like(reg)
    drv.memcpy_dtoh(back, dev)
    assert np.array_equal(back, original)
    reg.base.unregister()
    with pytest.raises(drv.LogicError, match="invalid resource handle"):
        reg.base.unregister()


def test_register_frombuffer_array(ctx):
    # inducer/pycuda#459: PyCUDA set the base twice and failed for arrays like this one.
    buf = bytearray(4096)
    ary = np.frombuffer(buf, dtype=np.float32)
    reg = drv.register_host_memory(ary)
    assert reg.base.base is ary
    reg[1] = 2.5
    assert np.frombuffer(buf, np.float32)[1] == 2.5


def test_register_keeps_read_only_and_releases(ctx):
    ro = np.zeros(1024, np.uint8)
    ro.flags.writeable = False
    reg = drv.register_host_memory(ro)
    assert not reg.flags.writeable
    with pytest.raises(drv.LogicError, match="cuMemHostRegister failed"):
        drv.register_host_memory(ro)  # already registered
    del reg
    gc.collect()
    # Registering the same memory again now works: it was unregistered with the view.
    drv.register_host_memory(ro).base.unregister()


def test_register_bad_arguments(ctx):
    with pytest.raises(drv.LogicError, match="not a numpy array"):
        drv.register_host_memory(bytearray(16))
    with pytest.raises(drv.LogicError, match="not contiguous"):
        drv.register_host_memory(np.ones((8, 8))[:, ::2])
    with pytest.raises(drv.LogicError, match="empty"):
        drv.register_host_memory(np.ones(0))


def test_host_arrays_never_hold_python_objects(ctx, fake):
    with_objects = np.dtype([("n", np.int32), ("o", object)])
    before = fake.live_host_allocations()
    for make in (drv.pagelocked_empty, drv.pagelocked_zeros, drv.aligned_empty, drv.managed_empty):
        for dtype in (object, with_objects):
            with pytest.raises(TypeError, match=r"\w+_empty: the array holds Python objects"):
                make(4, dtype)
    with pytest.raises(TypeError, match="register_host_memory: ary holds Python objects"):
        drv.register_host_memory(np.array([object()] * 8, dtype=object))
    with pytest.raises(TypeError, match="holds Python objects"):
        drv.pagelocked_empty_like(np.zeros(3, with_objects))
    assert fake.live_host_allocations() == before
