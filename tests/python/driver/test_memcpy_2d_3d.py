"""Pitched and 3-D copies: Memcpy2D (host, device, unified and array ends, offsets, checks of
the extents, buffers kept alive), Memcpy3D and Memcpy3DPeer. 1-D copies and fills:
test_memcpy.py."""

import gc

import numpy as np
import pytest
from support.memcpy_data import from_dev, rng

import cuplug.driver as drv

pytestmark = pytest.mark.gpu


# ---- Memcpy2D -----------------------------------------------------------------------------------


def test_memcpy_2d_host_device_host_with_offsets(ctx):
    host = rng(5).integers(0, 1 << 16, (12, 10), dtype=np.uint16)
    dev, pitch = drv.mem_alloc_pitch(10 * 2, 12, 4)
    drv.memset_d8(dev, 0, dev.size)

    up = drv.Memcpy2D()
    up.set_src_host(host)
    up.src_x_in_bytes = 2 * 2  # from column 2
    up.src_y = 3  # from row 3
    up.src_pitch = host.strides[0]
    up.set_dst_device(dev)
    up.dst_x_in_bytes = 1 * 2
    up.dst_y = 1
    up.dst_pitch = pitch
    up.width_in_bytes = 6 * 2
    up.height = 8
    up(aligned=True)

    down = drv.Memcpy2D()
    down.set_src_device(dev)
    down.src_pitch = pitch
    result = np.zeros((12, 10), np.uint16)
    down.set_dst_host(result)
    down.dst_pitch = result.strides[0]
    down.width_in_bytes = 10 * 2
    down.height = 12
    down()  # no argument: aligned=True (PyCUDA required the argument)

    expected = np.zeros_like(host)
    expected[1:9, 1:7] = host[3:11, 2:8]
    assert np.array_equal(result, expected)

    assert up.src_memory_type == drv.memory_type.HOST
    assert up.dst_memory_type == drv.memory_type.DEVICE
    assert up.src_y == 3 and up.dst_pitch == pitch and up.dst_device == int(dev)


def test_memcpy_2d_unaligned_and_stream(ctx):
    host = rng(6).integers(0, 255, (6, 7), dtype=np.uint8)
    dev = drv.mem_alloc(host.nbytes)
    c = drv.Memcpy2D()
    c.set_src_host(host)
    c.set_dst_device(dev)
    c.src_pitch = c.dst_pitch = c.width_in_bytes = 7
    c.height = 6
    c(aligned=False)
    assert np.array_equal(from_dev(dev, host.nbytes).reshape(6, 7), host)
    drv.memset_d8(dev, 0, dev.size)
    s = drv.Stream()
    c(s)
    s.synchronize()
    assert np.array_equal(from_dev(dev, host.nbytes).reshape(6, 7), host)
    drv.memset_d8(dev, 0, dev.size)
    c(stream=s)
    c(None)  # stream None: the legacy default stream
    drv.Event().record(None).synchronize()
    assert np.array_equal(from_dev(dev, host.nbytes).reshape(6, 7), host)


def test_memcpy_2d_keeps_its_buffers(ctx):
    c = drv.Memcpy2D()
    host = np.arange(32, dtype=np.uint8)
    c.set_src_host(host)
    del host  # PyCUDA would now copy from freed memory
    gc.collect()
    dev = drv.mem_alloc(32)
    c.set_dst_device(dev)
    del dev
    gc.collect()
    c.src_pitch = c.dst_pitch = c.width_in_bytes = 32
    c.height = 1
    c()
    assert list(from_dev(c.dst_device, 32)) == list(range(32))

    buf = bytearray(8)
    c.set_dst_host(buf)
    with pytest.raises(BufferError):
        buf.extend(b"x")  # exported while the copy refers to it


def test_memcpy_2d_extent_checks(ctx):
    host = np.zeros((4, 8), np.uint8)
    dev = drv.mem_alloc(32)
    c = drv.Memcpy2D()
    c.set_src_host(host)
    c.set_dst_device(dev)
    c.src_pitch = c.dst_pitch = 8
    c.width_in_bytes = 8
    c.height = 5
    with pytest.raises(
        ValueError,
        match=r"Memcpy2D: the source region \[0, 40\) lies outside its 32-byte host buffer",
    ):
        c()
    c.height = 4
    c.dst_y = 1
    with pytest.raises(ValueError, match="destination region .* 32-byte device allocation"):
        c(aligned=True)
    c.dst_device = int(dev)  # a raw pointer: its size is unknown, not checked
    c.dst_y = 0
    c()


def test_memcpy_2d_strided_source(ctx):
    # set_src_host takes strided buffers: copy every other row of a matrix by pitch.
    host = rng(7).integers(0, 255, (8, 16), dtype=np.uint8)
    view = host[::2]
    dev = drv.mem_alloc(4 * 16)
    c = drv.Memcpy2D()
    c.set_src_host(view)
    c.src_pitch = view.strides[0]
    c.set_dst_device(dev)
    c.dst_pitch = c.width_in_bytes = 16
    c.height = 4
    c()
    assert np.array_equal(from_dev(dev, 64).reshape(4, 16), view)


def test_memcpy_2d_unified(ctx):
    src = drv.managed_zeros((4, 4), np.float32)
    src[:] = np.arange(16, dtype=np.float32).reshape(4, 4)
    dst = drv.managed_zeros((4, 4), np.float32)
    c = drv.Memcpy2D()
    c.set_src_unified(src)
    c.set_dst_unified(dst.base)  # a ManagedAllocation works as well as its array
    c.src_pitch = c.dst_pitch = c.width_in_bytes = 16
    c.height = 4
    c()
    assert np.array_equal(dst, src)
    assert c.src_memory_type == drv.memory_type.UNIFIED


def test_memcpy_2d_array_needs_a_handle(ctx):
    c = drv.Memcpy2D()
    with pytest.raises(AttributeError):
        c.set_src_array(object())


# ---- Memcpy3D / Memcpy3DPeer --------------------------------------------------------------------


def make_3d_copy(cls, src, dst_dev, dst_pitch, dst_rows):
    c = cls()
    c.set_src_host(src)
    c.src_pitch = src.strides[1]
    c.src_height = src.shape[1]
    c.set_dst_device(dst_dev)
    c.dst_pitch = dst_pitch
    c.dst_height = dst_rows
    return c


def test_memcpy_3d_sub_volume(ctx):
    vol = rng(8).integers(0, 1 << 31, (5, 6, 7), dtype=np.int32)  # depth, rows, columns
    dst_pitch, dst_rows = 7 * 4, 6
    dev = drv.mem_alloc(5 * dst_rows * dst_pitch)
    drv.memset_d8(dev, 0, dev.size)
    c = make_3d_copy(drv.Memcpy3D, vol, dev, dst_pitch, dst_rows)
    c.src_x_in_bytes, c.src_y, c.src_z = 1 * 4, 2, 1
    c.dst_x_in_bytes, c.dst_y, c.dst_z = 0, 0, 2
    c.width_in_bytes, c.height, c.depth = 4 * 4, 3, 3
    c()
    back = np.empty(dev.size, np.uint8)
    drv.memcpy_dtoh(back, dev)
    got = back.view(np.int32).reshape(5, 6, 7)
    expected = np.zeros_like(vol)
    expected[2:5, 0:3, 0:4] = vol[1:4, 2:5, 1:5]
    assert np.array_equal(got, expected)
    assert c.src_z == 1 and c.depth == 3 and c.src_lod == 0

    s = drv.Stream()
    drv.memset_d8(dev, 0, dev.size)
    c(s)
    s.synchronize()
    drv.memcpy_dtoh(back, dev)
    assert np.array_equal(back.view(np.int32).reshape(5, 6, 7), expected)

    c.depth = 5  # slices 1..5 of a 5-slice source
    with pytest.raises(ValueError, match="Memcpy3D: the source region"):
        c()


def test_memcpy_3d_peer(ctx):
    vol = rng(9).integers(0, 255, (2, 3, 4), dtype=np.uint8)
    dev = drv.mem_alloc(vol.nbytes)
    c = make_3d_copy(drv.Memcpy3DPeer, vol, dev, 4, 3)
    c.width_in_bytes, c.height, c.depth = 4, 3, 2
    c.set_src_context(ctx)
    c.set_dst_context(ctx)
    c()
    assert np.array_equal(from_dev(dev, vol.nbytes).reshape(vol.shape), vol)
    drv.memset_d8(dev, 0, dev.size)
    peer = drv.Memcpy3DPeer()  # contexts left unset: the current one
    peer.set_src_device(dev)
    out = np.zeros_like(vol)
    peer.set_dst_host(out)
    peer.src_pitch = peer.dst_pitch = peer.width_in_bytes = 4
    peer.src_height = peer.dst_height = peer.height = 3
    peer.depth = 2
    s = drv.Stream()
    c(s)
    peer(s)
    s.synchronize()
    assert np.array_equal(out, vol)
