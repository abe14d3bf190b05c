"""Copies and fills: memcpy_* (+ _async), peer copies, memset_* (+ _async), the Python copy
helpers and stream arguments, host buffers holding Python objects, copies from threads without a
context. Memcpy2D / 3D / 3DPeer: test_memcpy_2d_3d.py."""

import numpy as np
import pytest
from support.memcpy_data import from_dev, rng
from support.threads import in_thread

import cuplug.driver as drv

pytestmark = pytest.mark.gpu


def to_dev(ary):
    a = drv.mem_alloc(ary.nbytes)
    drv.memcpy_htod(a, ary)
    return a


# ---- 1-D copies ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float64, np.complex64])
def test_htod_dtoh_dtod_round_trip(ctx, dtype):
    data = (rng(1).standard_normal(777) * 100).astype(dtype)
    a = to_dev(data)
    b = drv.mem_alloc(data.nbytes)
    drv.memcpy_dtod(b, a, data.nbytes)
    back = np.empty_like(data)
    drv.memcpy_dtoh(back, b)
    assert np.array_equal(back, data)


@pytest.mark.parametrize("use_stream", [False, True])
def test_async_round_trip(ctx, use_stream):
    stream = drv.Stream() if use_stream else None
    data = rng(2).integers(0, 1 << 30, 500, dtype=np.int64)
    a = drv.mem_alloc(data.nbytes)
    b = drv.mem_alloc(data.nbytes)
    drv.memcpy_htod_async(a, data, stream)
    drv.memcpy_dtod_async(b, a, data.nbytes, stream=stream)
    back = np.zeros_like(data)
    drv.memcpy_dtoh_async(back, b, stream)
    if stream is not None:
        stream.synchronize()
    else:
        drv.Event().record().synchronize()  # the legacy default stream's work is done
    assert np.array_equal(back, data)


def test_fortran_and_bytes_sources(ctx):
    data = np.asfortranarray(rng(3).standard_normal((5, 4)))
    a = to_dev(data)
    back = np.empty_like(data)  # also F-ordered: the bytes come back in the same order
    drv.memcpy_dtoh(back, a)
    assert np.array_equal(back, data)
    b = drv.mem_alloc(5)
    drv.memcpy_htod(b, b"hello")
    assert bytes(from_dev(b, 5)) == b"hello"
    drv.memcpy_htod(b, memoryview(bytearray(b"HELLO")))
    assert bytes(from_dev(b, 5)) == b"HELLO"


def test_size_checks_name_both_sizes(ctx):
    a = drv.mem_alloc(16)
    with pytest.raises(ValueError, match=r"source buffer is 32 bytes.*only 16 bytes"):
        drv.memcpy_htod(a, np.zeros(32, np.uint8))
    with pytest.raises(ValueError, match=r"destination buffer is 17 bytes.*only 16 bytes"):
        drv.memcpy_dtoh(np.zeros(17, np.uint8), a)
    b = drv.mem_alloc(64)
    with pytest.raises(
        ValueError, match=r"copy is 32 bytes.*destination DeviceAllocation has only 16"
    ):
        drv.memcpy_dtod(a, b, 32)
    with pytest.raises(ValueError, match=r"copy is 32 bytes.*source DeviceAllocation has only 16"):
        drv.memcpy_dtod(b, a, 32)
    with pytest.raises(ValueError, match=r"memcpy_htod_async"):
        drv.memcpy_htod_async(a, np.zeros(32, np.uint8))
    # Smaller copies are fine; raw pointers are not checked (their size is unknown).
    drv.memcpy_htod(a, np.zeros(8, np.uint8))
    drv.memcpy_dtod(int(b) + 32, a, 16)


def test_bad_host_buffers(ctx):
    a = drv.mem_alloc(64)
    with pytest.raises(ValueError, match="memcpy_htod: src must be a contiguous host buffer"):
        drv.memcpy_htod(a, np.zeros((4, 4))[:, ::2])
    with pytest.raises(TypeError, match="memcpy_htod: src .* type 'list'"):
        drv.memcpy_htod(a, [1, 2, 3])
    ro = np.zeros(8, np.uint8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="memcpy_dtoh: dest must be a writable contiguous"):
        drv.memcpy_dtoh(ro, a)
    with pytest.raises(ValueError, match="writable"):
        drv.memcpy_dtoh(b"immutable", a)


def test_driver_errors_are_logic_errors(ctx):
    with pytest.raises(drv.LogicError, match="cuMemcpyHtoD failed"):
        drv.memcpy_htod(0x10, b"abc")  # not device memory


# ---- peer copies --------------------------------------------------------------------------------


def test_memcpy_peer_with_and_without_contexts(ctx):
    if drv.Device.count() < 2:
        pytest.skip("needs two devices")
    data = rng(4).integers(0, 255, 300, dtype=np.uint8)
    src = to_dev(data)
    other = drv.Device(1).make_context()
    try:
        dst = drv.mem_alloc(300)
        drv.memcpy_peer(dst, src, 300, dest_context=other, src_context=ctx)
        assert np.array_equal(from_dev(dst, 300), data)
        # None means the current context: here `other` for both sides of a local copy.
        dst2 = drv.mem_alloc(300)
        drv.memcpy_peer(dst2, dst, 300)
        assert np.array_equal(from_dev(dst2, 300), data)
        dst3 = drv.mem_alloc(300)
        s = drv.Stream()
        drv.memcpy_peer_async(dst3, src, 300, other, ctx, stream=s)
        s.synchronize()
        assert np.array_equal(from_dev(dst3, 300), data)
    finally:
        drv.Context.pop()


def test_memcpy_peer_rejects_non_contexts(ctx):
    a = drv.mem_alloc(8)
    with pytest.raises(
        TypeError, match="memcpy_peer: dest_context must be a Context or None, got str"
    ):
        drv.memcpy_peer(a, a, 8, dest_context="ctx")


# ---- memset -------------------------------------------------------------------------------------


def test_memset_1d(ctx):
    a = drv.mem_alloc(64)
    drv.memset_d8(a, 0xAB, 64)
    assert (from_dev(a, 64) == 0xAB).all()
    drv.memset_d16(a, 0x1234, 32)
    assert (from_dev(a, 64).view(np.uint16) == 0x1234).all()
    drv.memset_d32(int(a) + 8, np.float32(1.5).view(np.uint32), 4)
    words = from_dev(a, 64).view(np.uint32)
    assert (words[2:6].view(np.float32) == 1.5).all() and (words[:2] == 0x12341234).all()
    drv.memset_d32(a, -1, 16)  # two's complement, as C would take it
    assert (from_dev(a, 64) == 0xFF).all()


def test_memset_async(ctx):
    a = drv.mem_alloc(40)
    s = drv.Stream()
    drv.memset_d8_async(a, 1, 40, s)
    drv.memset_d16_async(a, 0x0202, 10)
    drv.memset_d32_async(int(a) + 20, 0x03030303, 5, stream=s)
    s.synchronize()
    assert list(from_dev(a, 40)) == [2] * 20 + [3] * 20


def test_memset_checks(ctx):
    a = drv.mem_alloc(16)
    with pytest.raises(ValueError, match="memset_d8: data 256 does not fit in 8 bits"):
        drv.memset_d8(a, 256, 1)
    with pytest.raises(ValueError, match="does not fit in 16 bits"):
        drv.memset_d16(a, -40000, 1)
    with pytest.raises(TypeError, match="data must be an integer"):
        drv.memset_d32(a, 1.0, 1)
    with pytest.raises(ValueError, match=r"fill is 32 bytes.*only 16 bytes"):
        drv.memset_d16(a, 0, 16)


@pytest.mark.parametrize("bits,dtype", [(8, np.uint8), (16, np.uint16), (32, np.uint32)])
def test_memset_2d(ctx, bits, dtype):
    width, height = 5, 4
    a, pitch = drv.mem_alloc_pitch(width * dtype().itemsize, height, 4)
    drv.memset_d8(a, 0, a.size)
    getattr(drv, f"memset_d2d{bits}")(a, pitch, 7, width, height - 1)
    rows = from_dev(a, a.size).reshape(height, pitch)
    filled = rows[:, : width * dtype().itemsize].copy().view(dtype)
    assert (filled[: height - 1] == 7).all() and (filled[height - 1] == 0).all()
    assert (rows[:, width * dtype().itemsize :] == 0).all()
    s = drv.Stream()
    getattr(drv, f"memset_d2d{bits}_async")(a, pitch, 9, width, height, s)
    s.synchronize()
    rows = from_dev(a, a.size).reshape(height, pitch)
    assert (rows[:, : width * dtype().itemsize].copy().view(dtype) == 9).all()
    with pytest.raises(ValueError, match="fill"):
        getattr(drv, f"memset_d2d{bits}")(a, pitch, 0, width, height + 1)


# ---- Python helpers (cuplug._driver.copies) and stream arguments -------------------------------


def test_to_device_from_device_helpers(ctx):
    data = rng(10).standard_normal((6, 5)).astype(np.float32)
    a = drv.to_device(data)
    assert a.size == data.nbytes
    assert np.array_equal(drv.from_device(a, data.shape, data.dtype), data)
    assert np.array_equal(drv.from_device_like(a, data), data)
    f = drv.from_device(a, (5, 6), np.float32, order="F")
    assert f.flags.f_contiguous and np.array_equal(f.ravel(order="F"), data.ravel())
    # Non-contiguous buffers go in C order, as memoryview(...).tobytes() lays them out.
    strided = data[:, ::2]
    assert np.array_equal(drv.from_device_like(drv.to_device(strided), strided), strided)
    assert drv.to_device(b"").size == 0
    assert drv.from_device(drv.mem_alloc(0), (0,), np.int8).shape == (0,)
    assert drv.mem_alloc_like(data).size == data.nbytes


class CudaStreamProtocol:
    def __init__(self, handle):
        self.handle_value = handle

    def __cuda_stream__(self):
        return (0, self.handle_value)


class ForeignStream:  # Numba-style: .handle is a ctypes pointer
    def __init__(self, handle):
        import ctypes

        self.handle = ctypes.c_void_p(handle)


def test_stream_arguments(ctx):
    s = drv.Stream()
    a = drv.mem_alloc(8)
    for stream in (None, 0, s, s.handle, CudaStreamProtocol(s.handle), ForeignStream(s.handle)):
        drv.memset_d8_async(a, 5, 8, stream)
    assert list(from_dev(a, 8)) == [5] * 8
    with pytest.raises(TypeError, match="'Event' as a stream"):
        drv.memset_d8_async(a, 0, 8, drv.Event())  # has a .handle, but is no stream
    with pytest.raises(TypeError, match="'str' as a stream"):
        drv.memset_d8_async(a, 0, 8, "default")


# ---- host buffers holding Python objects --------------------------------------------------------

# Arrays whose items are Python object references: copying their bytes moves pointers into
# this process to the device, and copying bytes over them corrupts reference counts.
OBJECT_ARRAYS = {
    "object": lambda: np.array([object() for _ in range(8)], dtype=object),
    "object_field": lambda: np.zeros(4, [("n", np.int32), ("o", object)]),
    "nested_object": lambda: np.zeros(2, [("inner", [("a", np.float32), ("b", object)])]),
    "memoryview": lambda: memoryview(np.array([None] * 8, dtype=object)),
}


@pytest.fixture(params=sorted(OBJECT_ARRAYS))
def object_array(request):
    return OBJECT_ARRAYS[request.param]()


def test_memcpy_refuses_buffers_holding_objects(ctx, fake, object_array):
    dev = drv.mem_alloc(256)
    keep = [] if isinstance(object_array, memoryview) else list(object_array.flat)
    s = drv.Stream()
    for call in (
        lambda: drv.memcpy_dtoh(object_array, dev),
        lambda: drv.memcpy_dtoh_async(object_array, dev, s),
        lambda: drv.memcpy_htod(dev, object_array),
        lambda: drv.memcpy_htod_async(dev, object_array, s),
    ):
        with pytest.raises(TypeError, match=r"memcpy_\w+: (src|dest) holds Python objects"):
            call()
    # Nothing was written over the references: the objects are still intact.
    if keep:
        assert list(object_array.flat) == keep


def test_memcpy_2d_refuses_host_buffers_holding_objects(ctx, object_array):
    c = drv.Memcpy2D()
    with pytest.raises(TypeError, match="set_src_host: the source holds Python objects"):
        c.set_src_host(object_array)
    with pytest.raises(TypeError, match="set_dst_host: the destination holds Python objects"):
        c.set_dst_host(object_array)
    with pytest.raises(TypeError, match="set_dst_unified: the destination holds Python objects"):
        c.set_dst_unified(object_array)
    c3 = drv.Memcpy3D()
    with pytest.raises(TypeError, match="set_dst_host: the destination holds Python objects"):
        c3.set_dst_host(object_array)


def test_plain_structured_arrays_are_still_copied(ctx):
    # A field *named* "O" is not an object field (the buffer format is "T{<i:x:<d:O:}").
    data = np.zeros(3, [("x", np.int32), ("O", np.float64)])
    data["x"], data["O"] = [1, 2, 3], [0.5, 1.5, 2.5]
    dev = drv.to_device(data)
    assert np.array_equal(drv.from_device_like(dev, data), data)


def test_to_device_and_from_device_refuse_objects(ctx, fake):
    before = fake.live_allocations()
    strided = np.array([object() for _ in range(8)], dtype=object)[::2]
    with pytest.raises(TypeError, match="to_device: bf_obj holds Python objects"):
        drv.to_device(strided)  # not contiguous: would go through tobytes()
    with pytest.raises(TypeError, match="holds Python objects"):
        drv.to_device(np.array([1, "a"], dtype=object))
    assert fake.live_allocations() == before
    dev = drv.mem_alloc(64)
    with pytest.raises(TypeError, match="memcpy_dtoh: dest holds Python objects"):
        drv.from_device(dev, (4,), object)


# ---- allocations from threads without a context -------------------------------------------------


def test_copies_and_fills_work_from_a_thread_without_a_context(ctx):
    a, b = drv.mem_alloc(64), drv.mem_alloc(64)
    data = np.arange(16, dtype=np.uint32)

    def worker():
        assert drv.Context.get_current() is None
        drv.memcpy_htod(a, data)
        drv.memcpy_dtod(b, a, 64)
        out = np.zeros(16, np.uint32)
        drv.memcpy_dtoh(out, b)
        drv.memset_d32(a, 7, 16)
        drv.memset_d2d8(a, 8, 1, 8, 2)
        filled = np.zeros(64, np.uint8)
        drv.memcpy_dtoh(filled, a)
        c = drv.Memcpy2D()
        c.set_src_device(b)
        back = np.zeros(16, np.uint32)
        c.set_dst_host(back)
        c.src_pitch = c.dst_pitch = c.width_in_bytes = 64
        c.height = 1
        c()
        assert drv.Context.get_current() is None  # pushed for each call, popped after
        return out, filled, back

    out, filled, back = in_thread(worker)
    assert np.array_equal(out, data) and np.array_equal(back, data)
    assert list(filled[:16]) == [1] * 16 and list(filled[16:20]) == [7, 0, 0, 0]
    assert drv.Context.get_current() == ctx


def test_a_thread_with_a_context_keeps_it_for_copies(ctx):
    a = drv.mem_alloc(16)
    other = drv.Device(0).make_context()
    try:
        drv.memcpy_htod(a, np.ones(4, np.float32))  # runs in `other`: unified addressing
        assert drv.Context.get_current() == other
    finally:
        drv.Context.pop()
        other.detach()
    out = np.zeros(4, np.float32)
    drv.memcpy_dtoh(out, a)
    assert list(out) == [1, 1, 1, 1]


def test_copies_to_an_allocation_of_a_detached_context_raise(ctx):
    other = drv.Device(0).make_context()
    a = drv.mem_alloc(16)
    drv.Context.pop()
    other.detach()  # its memory went with it: the driver must not see the address again

    def copy():
        with pytest.raises(drv.LogicError, match="cannot activate dead context"):
            drv.memcpy_htod(a, b"x" * 16)
        with pytest.raises(drv.LogicError, match="cannot activate dead context"):
            drv.memset_d8(a, 0, 16)

    copy()
    in_thread(copy)
