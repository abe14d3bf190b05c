"""The fake CUDA driver through ctypes, without cuplug: device memory.

Behaviour tests run against the fake and, where one is usable, the real driver too (`drv` is
parametrized); tests of fake-only conventions use `fake_drv`.
"""

from __future__ import annotations

import pytest
from support.fake_driver import *  # noqa: F401,F403

# Device memory --------------------------------------------------------------------------------


def test_alloc_copy_free(drv, ctx):
    p = alloc(drv, 1000)
    assert p % 256 == 0
    data = bytes(range(256)) * 3 + bytes(232)
    drv.check("cuMemcpyHtoD", p, data, len(data))
    assert to_host(drv, p, 1000) == data
    drv.check("cuMemFree", p)


def test_bad_frees(drv, ctx):
    drv.check("cuMemFree", 0)  # like free(NULL)
    p = alloc(drv, 1024)
    assert drv.cuMemFree(p + 16) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemFree", p)
    assert drv.cuMemFree(p) == CUDA_ERROR_INVALID_VALUE


def test_alloc_sizes(drv, ctx):
    p = c_uint64()
    assert drv.cuMemAlloc(byref(p), 0) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuMemAlloc(byref(p), 1 << 50) == fc.CUDA_ERROR_OUT_OF_MEMORY


@pytest.mark.alone  # [real] reads the whole device's free memory
def test_mem_get_info_follows_allocations(drv, ctx):
    free0, total = c_size_t(), c_size_t()
    drv.check("cuMemGetInfo", byref(free0), byref(total))
    assert 0 < free0.value <= total.value
    drv.check("cuMemGetInfo", None, byref(total))  # either output may be left out
    size = 256 << 20
    p = alloc(drv, size)
    free1 = c_size_t()
    drv.check("cuMemGetInfo", byref(free1), byref(total))
    assert free1.value <= free0.value - size
    drv.check("cuMemFree", p)
    drv.check("cuMemGetInfo", byref(free1), byref(total))
    assert free1.value >= free0.value - (2 << 20)


def test_address_range(drv, ctx):
    p = alloc(drv, 5000)
    base, size = c_uint64(), c_size_t()
    drv.check("cuMemGetAddressRange", byref(base), byref(size), p + 1234)
    assert (base.value, size.value) == (p, 5000)
    drv.check("cuMemGetAddressRange", None, byref(size), p)
    drv.check("cuMemFree", p)
    assert drv.cuMemGetAddressRange(byref(base), byref(size), p) == CUDA_ERROR_NOT_FOUND


def test_alloc_pitch(drv, ctx):
    p, pitch = c_uint64(), c_size_t()
    drv.check("cuMemAllocPitch", byref(p), byref(pitch), 100, 10, 4)
    assert pitch.value >= 100 and pitch.value % 128 == 0
    base, size = c_uint64(), c_size_t()
    drv.check("cuMemGetAddressRange", byref(base), byref(size), p.value)
    assert size.value >= pitch.value * 10
    drv.check("cuMemFree", p.value)
    assert drv.cuMemAllocPitch(byref(p), byref(pitch), 100, 10, 3) == CUDA_ERROR_INVALID_VALUE


def test_copies_are_bounds_checked(drv, ctx):
    p = alloc(drv, 4096)
    q = alloc(drv, 4096)
    data = (c_ubyte * 8192)()
    assert drv.cuMemcpyHtoD(p, data, 4097) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuMemcpyDtoH(data, p + 4000, 100) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuMemcpyDtoD(q, p + 1, 4096) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemcpyDtoD", q, p, 4096)
    drv.check("cuMemFree", p)
    drv.check("cuMemFree", q)


def test_copies_touching_freed_memory_fail(drv, ctx):
    p = alloc(drv, 4096)
    drv.check("cuMemFree", p)
    data = (c_ubyte * 16)()
    assert drv.cuMemcpyHtoD(p, data, 16) == CUDA_ERROR_INVALID_VALUE


def test_unified_copies(drv, ctx):
    p = alloc(drv, 64)
    q = alloc(drv, 64)
    src = (c_ubyte * 64)(*range(64))
    dst = (c_ubyte * 64)()
    drv.check("cuMemcpy", p, ctypes.addressof(src), 64)  # pageable host -> device
    drv.check("cuMemcpy", q, p, 64)
    drv.check("cuMemcpy", ctypes.addressof(dst), q, 64)
    assert bytes(dst) == bytes(src)
    stream = c_void_p()
    drv.check("cuStreamCreate", byref(stream), 0)
    dst2 = (c_ubyte * 64)()
    drv.check("cuMemcpyDtoDAsync", q, p, 64, stream)
    drv.check("cuMemcpyDtoHAsync", dst2, q, 64, stream)
    drv.check("cuMemcpyAsync", q, p, 64, stream)
    drv.check("cuStreamSynchronize", stream)
    assert bytes(dst2) == bytes(src)
    drv.check("cuStreamDestroy", stream)
    for x in (p, q):
        drv.check("cuMemFree", x)


def test_memsets(drv, ctx):
    p = alloc(drv, 64)
    drv.check("cuMemsetD8", p, 0xAB, 64)
    assert to_host(drv, p, 64) == b"\xab" * 64
    drv.check("cuMemsetD16", p, 0x1234, 8)
    assert to_host(drv, p, 16) == b"\x34\x12" * 8
    drv.check("cuMemsetD32", p + 16, 0xDEADBEEF, 4)
    assert to_host(drv, p + 16, 16) == bytes.fromhex("efbeadde") * 4
    drv.check("cuMemsetD32Async", p, 0, 16, None)
    drv.check("cuMemsetD2D8", p, 16, 0x11, 4, 4)  # 4 rows of 4 bytes, 16 apart
    row = b"\x11" * 4 + b"\x00" * 12
    assert to_host(drv, p, 64) == row * 4
    drv.check("cuMemsetD2D32", p, 16, 0x22222222, 2, 2)
    assert to_host(drv, p, 8) == b"\x22" * 8
    assert drv.cuMemsetD8(p, 0, 65) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuMemsetD32(p + 2, 0, 1) == CUDA_ERROR_INVALID_VALUE  # misaligned
    drv.check("cuMemFree", p)


def memcpy2d(**fields) -> fc.CUDA_MEMCPY2D:
    c = fc.CUDA_MEMCPY2D()
    for k, v in fields.items():
        setattr(c, k, v)
    return c


def test_copy_2d_honours_pitches_and_offsets(drv, ctx):
    rows, width, dpitch = 4, 10, 32
    host = (c_ubyte * (rows * 16))(*range(rows * 16))  # host pitch 16
    p = alloc(drv, rows * dpitch)
    drv.check("cuMemsetD8", p, 0, rows * dpitch)
    c = memcpy2d(
        srcMemoryType=fc.CU_MEMORYTYPE_HOST,
        srcHost=ctypes.addressof(host),
        srcPitch=16,
        srcXInBytes=2,
        srcY=1,
        dstMemoryType=fc.CU_MEMORYTYPE_DEVICE,
        dstDevice=p,
        dstPitch=dpitch,
        dstXInBytes=4,
        WidthInBytes=width,
        Height=rows - 1,
    )
    drv.check("cuMemcpy2D", byref(c))
    got = to_host(drv, p, rows * dpitch)
    for y in range(rows - 1):
        assert (
            got[y * dpitch + 4 : y * dpitch + 4 + width]
            == bytes(host)[(y + 1) * 16 + 2 : (y + 1) * 16 + 2 + width]
        )
        assert got[y * dpitch : y * dpitch + 4] == b"\0" * 4
    back = (c_ubyte * (rows * 16))()
    c2 = memcpy2d(
        srcMemoryType=fc.CU_MEMORYTYPE_UNIFIED,
        srcDevice=p,
        srcPitch=dpitch,
        dstMemoryType=fc.CU_MEMORYTYPE_HOST,
        dstHost=ctypes.addressof(back),
        dstPitch=16,
        WidthInBytes=16,
        Height=rows,
    )
    drv.check("cuMemcpy2DUnaligned", byref(c2))
    drv.check("cuMemcpy2DAsync", byref(c2), None)
    assert bytes(back)[4:14] == bytes(host)[18:28]
    drv.check("cuMemFree", p)


def test_copy_2d_rejects_bad_pitch_and_overflow(drv, ctx):
    p = alloc(drv, 256)
    host = (c_ubyte * 1024)()
    narrow = memcpy2d(
        srcMemoryType=fc.CU_MEMORYTYPE_HOST,
        srcHost=ctypes.addressof(host),
        srcPitch=8,
        dstMemoryType=fc.CU_MEMORYTYPE_DEVICE,
        dstDevice=p,
        dstPitch=64,
        WidthInBytes=16,
        Height=2,
    )
    assert drv.cuMemcpy2D(byref(narrow)) == CUDA_ERROR_INVALID_VALUE
    overflow = memcpy2d(
        srcMemoryType=fc.CU_MEMORYTYPE_HOST,
        srcHost=ctypes.addressof(host),
        srcPitch=64,
        dstMemoryType=fc.CU_MEMORYTYPE_DEVICE,
        dstDevice=p,
        dstPitch=64,
        WidthInBytes=64,
        Height=5,
    )
    assert drv.cuMemcpy2D(byref(overflow)) == CUDA_ERROR_INVALID_VALUE
    offset = memcpy2d(
        srcMemoryType=fc.CU_MEMORYTYPE_HOST,
        srcHost=ctypes.addressof(host),
        srcPitch=16,
        srcXInBytes=8,
        dstMemoryType=fc.CU_MEMORYTYPE_DEVICE,
        dstDevice=p,
        dstPitch=16,
        WidthInBytes=16,
        Height=2,
    )
    assert drv.cuMemcpy2D(byref(offset)) == CUDA_ERROR_INVALID_VALUE  # x + width beyond the pitch
    one_row = memcpy2d(
        srcMemoryType=fc.CU_MEMORYTYPE_HOST,
        srcHost=ctypes.addressof(host),
        dstMemoryType=fc.CU_MEMORYTYPE_DEVICE,
        dstDevice=p,
        WidthInBytes=16,
        Height=1,
    )
    drv.check("cuMemcpy2D", byref(one_row))  # a single row needs no pitch
    no_array = memcpy2d(
        srcMemoryType=fc.CU_MEMORYTYPE_ARRAY,
        dstMemoryType=fc.CU_MEMORYTYPE_DEVICE,
        dstDevice=p,
        dstPitch=64,
        WidthInBytes=16,
        Height=2,
    )
    assert drv.cuMemcpy2D(byref(no_array)) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemFree", p)


def test_copy_2d_with_a_made_up_array_is_undefined_behaviour(fake_drv):
    """The real driver's answer to a made-up array handle is not reliable (it may crash)."""
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    p = alloc(fake_drv, 256)
    copy = memcpy2d(
        srcMemoryType=fc.CU_MEMORYTYPE_ARRAY,
        srcArray=1234,
        dstMemoryType=fc.CU_MEMORYTYPE_DEVICE,
        dstDevice=p,
        dstPitch=64,
        WidthInBytes=16,
        Height=2,
    )
    assert fake_drv.cuMemcpy2D(byref(copy)) == fc.CUDA_ERROR_INVALID_HANDLE
    assert "array handle 1234" in fake_drv.take_undefined_behaviour()[0]


def test_copy_3d(drv, ctx):
    w, h, d = 8, 3, 4
    pitch, height = 16, 4  # device layout: 16-byte rows, 4 rows per slice
    host = (c_ubyte * (w * h * d))(*range(w * h * d))
    p = alloc(drv, pitch * height * (d + 1))
    drv.check("cuMemsetD8", p, 0xFF, pitch * height * (d + 1))
    c = fc.CUDA_MEMCPY3D(
        srcMemoryType=fc.CU_MEMORYTYPE_HOST,
        srcHost=ctypes.addressof(host),
        srcPitch=w,
        srcHeight=h,
        dstMemoryType=fc.CU_MEMORYTYPE_DEVICE,
        dstDevice=p,
        dstPitch=pitch,
        dstHeight=height,
        dstZ=1,
        dstXInBytes=2,
        WidthInBytes=w,
        Height=h,
        Depth=d,
    )
    drv.check("cuMemcpy3D", byref(c))
    got = to_host(drv, p, pitch * height * (d + 1))
    for z in range(d):
        for y in range(h):
            start = (z + 1) * pitch * height + y * pitch + 2
            assert got[start : start + w] == bytes(host)[(z * h + y) * w : (z * h + y + 1) * w]
    assert got[: pitch * height] == b"\xff" * (pitch * height)
    back = (c_ubyte * (w * h * d))()
    r = fc.CUDA_MEMCPY3D(
        srcMemoryType=fc.CU_MEMORYTYPE_DEVICE,
        srcDevice=p,
        srcPitch=pitch,
        srcHeight=height,
        srcZ=1,
        srcXInBytes=2,
        dstMemoryType=fc.CU_MEMORYTYPE_HOST,
        dstHost=ctypes.addressof(back),
        dstPitch=w,
        dstHeight=h,
        WidthInBytes=w,
        Height=h,
        Depth=d,
    )
    drv.check("cuMemcpy3DAsync", byref(r), None)
    drv.check("cuCtxSynchronize", None)
    assert bytes(back) == bytes(host)
    drv.check("cuMemFree", p)


def test_peer_copies(drv, ctx):
    other = c_void_p()
    drv.check("cuCtxCreate", byref(other), None, 0, 0)
    q = alloc(drv, 128)  # in `other`
    drv.check("cuCtxPopCurrent", None)
    p = alloc(drv, 128)
    drv.check("cuMemsetD8", p, 7, 128)
    drv.check("cuMemcpyPeer", q, other, p, ctx, 128)
    drv.check("cuMemcpyPeerAsync", q, other, p, ctx, 64, None)
    c = fc.CUDA_MEMCPY3D_PEER(
        srcMemoryType=fc.CU_MEMORYTYPE_DEVICE,
        srcDevice=q,
        srcContext=other,
        srcPitch=128,
        dstMemoryType=fc.CU_MEMORYTYPE_DEVICE,
        dstDevice=p + 0,
        dstContext=ctx,
        dstPitch=128,
        WidthInBytes=128,
        Height=1,
        Depth=1,
    )
    drv.check("cuMemcpy3DPeer", byref(c))
    drv.check("cuMemcpy3DPeerAsync", byref(c), None)
    drv.check("cuCtxSynchronize", None)
    assert to_host(drv, p, 128) == b"\x07" * 128
    drv.check("cuMemFree", p)
    drv.check("cuCtxDestroy", other)
