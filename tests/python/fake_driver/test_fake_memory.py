"""The fake CUDA driver through ctypes, without cuplug: device, host, managed and registered memory, stream-ordered pools.

Behaviour tests run against the fake and, where one is usable, the real driver too (`drv` is
parametrized); tests of fake-only conventions use `fake_drv`.
"""

from __future__ import annotations

from fake_support import *  # noqa: F401,F403

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


def test_copy_2d_with_arrays_is_not_supported(fake_drv):
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
    assert fake_drv.cuMemcpy2D(byref(copy)) == fc.CUDA_ERROR_NOT_SUPPORTED


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


# Host, managed and registered memory ---------------------------------------------------------


def test_host_alloc(drv, ctx):
    p = c_void_p()
    drv.check("cuMemHostAlloc", byref(p), 4096, 1)  # PORTABLE
    flags = c_uint()
    drv.check("cuMemHostGetFlags", byref(flags), p)
    assert flags.value == 3  # unified addressing maps every allocation: DEVICEMAP is reported
    dptr = c_uint64()
    drv.check("cuMemHostGetDevicePointer", byref(dptr), p, 0)
    assert dptr.value == p.value
    assert drv.cuMemHostGetDevicePointer(byref(c_uint64()), p, 1) == CUDA_ERROR_INVALID_VALUE
    ctypes.memset(p, 0x5A, 4096)  # host-accessible
    d = alloc(drv, 4096)
    drv.check("cuMemcpyHtoD", d, p, 4096)
    assert to_host(drv, d, 16) == b"\x5a" * 16
    drv.check("cuMemsetD8", dptr.value, 1, 8)  # device-accessible through its device pointer
    drv.check("cuMemsetD8", d, 2, 16)
    drv.check("cuMemcpyDtoD", dptr.value + 8, d, 8)
    assert ctypes.string_at(p, 16) == b"\x01" * 8 + b"\x02" * 8
    drv.check("cuMemFree", d)
    drv.check("cuMemFreeHost", p)
    plain = (c_ubyte * 64)()
    assert drv.cuMemHostGetFlags(byref(flags), plain) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuMemHostAlloc(byref(p), 4096, 0x80) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemHostAlloc", byref(p), 0, 0)  # zero bytes is allowed
    drv.check("cuMemFreeHost", p)


def test_host_register(drv, ctx):
    buffer = ctypes.create_string_buffer(8192)
    drv.check("cuMemHostRegister", buffer, 8192, 0)
    assert drv.cuMemHostRegister(buffer, 4096, 0) == fc.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
    flags = c_uint()
    drv.check("cuMemHostGetFlags", byref(flags), buffer)
    dptr = c_uint64()
    drv.check("cuMemHostGetDevicePointer", byref(dptr), buffer, 0)
    drv.check("cuMemsetD8", dptr.value, 9, 8192)
    assert buffer.raw[:4] == b"\x09" * 4
    drv.check("cuMemHostUnregister", buffer)
    assert drv.cuMemHostUnregister(buffer) == fc.CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
    assert drv.cuMemHostRegister(buffer, 8192, 4) == CUDA_ERROR_INVALID_VALUE  # not I/O memory


def test_managed_memory(drv, ctx):
    p = c_uint64()
    drv.check("cuMemAllocManaged", byref(p), 4096, 1)  # ATTACH_GLOBAL
    drv.check("cuMemsetD8", p, 3, 4096)
    drv.check("cuCtxSynchronize", None)
    assert ctypes.string_at(p.value, 8) == b"\x03" * 8  # host-accessible
    managed = ctypes.c_bool()
    drv.check("cuPointerGetAttribute", byref(managed), 8, p)  # IS_MANAGED
    assert managed.value
    stream = c_void_p()
    drv.check("cuStreamCreate", byref(stream), 0)
    drv.check("cuStreamAttachMemAsync", stream, p, 0, 4)  # ATTACH_SINGLE
    assert drv.cuStreamAttachMemAsync(None, p, 0, 4) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuStreamSynchronize", stream)
    drv.check("cuStreamDestroy", stream)
    drv.check("cuMemFree", p)
    assert drv.cuMemAllocManaged(byref(p), 4096, 4) == CUDA_ERROR_INVALID_VALUE


CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 1, 2
CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_IS_MANAGED = 3, 8
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE = 11, 12


def test_pointer_attributes(drv, ctx):
    p = alloc(drv, 1000)
    owner = c_void_p()
    drv.check("cuPointerGetAttribute", byref(owner), CU_POINTER_ATTRIBUTE_CONTEXT, p + 10)
    assert owner.value == ctx.value
    kind = c_uint()
    drv.check("cuPointerGetAttribute", byref(kind), CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p)
    assert kind.value == fc.CU_MEMORYTYPE_DEVICE
    ordinal = c_int(-1)
    drv.check("cuPointerGetAttribute", byref(ordinal), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p)
    assert ordinal.value == 0
    start, size = c_uint64(), c_size_t()
    drv.check("cuPointerGetAttribute", byref(start), CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 9)
    drv.check("cuPointerGetAttribute", byref(size), CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 9)
    assert (start.value, size.value) == (p, 1000)
    managed = ctypes.c_bool(True)
    drv.check("cuPointerGetAttribute", byref(managed), CU_POINTER_ATTRIBUTE_IS_MANAGED, p)
    assert not managed.value
    host = c_void_p()
    drv.check("cuMemHostAlloc", byref(host), 100, 0)
    drv.check("cuPointerGetAttribute", byref(kind), CU_POINTER_ATTRIBUTE_MEMORY_TYPE, host.value)
    assert kind.value == fc.CU_MEMORYTYPE_HOST
    drv.check("cuMemFreeHost", host)
    plain = (c_ubyte * 64)()
    assert (
        drv.cuPointerGetAttribute(
            byref(kind), CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ctypes.addressof(plain)
        )
        == CUDA_ERROR_INVALID_VALUE
    )
    drv.check("cuMemFree", p)


def test_ipc_memory_handle_needs_cumemalloc_memory(drv, ctx):
    handle = fc.CUipcMemHandle()
    p = alloc(drv, 4096)
    drv.check("cuIpcGetMemHandle", byref(handle), p)
    drv.check("cuMemFree", p)
    host = c_void_p()
    drv.check("cuMemHostAlloc", byref(host), 4096, 0)
    assert drv.cuIpcGetMemHandle(byref(handle), host.value) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemFreeHost", host)


def test_ipc_handles_of_this_process_cannot_be_opened(drv, ctx):
    p = alloc(drv, 256)
    handle = fc.CUipcMemHandle()
    drv.check("cuIpcGetMemHandle", byref(handle), p)
    opened = c_uint64()
    assert drv.cuIpcOpenMemHandle(byref(opened), handle, 1) == CUDA_ERROR_INVALID_CONTEXT
    event = c_void_p()
    drv.check("cuEventCreate", byref(event), 6)  # INTERPROCESS | DISABLE_TIMING
    event_handle = fc.CUipcEventHandle()
    drv.check("cuIpcGetEventHandle", byref(event_handle), event)
    assert drv.cuIpcOpenEventHandle(byref(c_void_p()), event_handle) == CUDA_ERROR_INVALID_CONTEXT
    drv.check("cuEventDestroy", event)
    drv.check("cuMemFree", p)


def test_ipc_memory_round_trip_in_process(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.set_ipc_in_process(True)
    p = alloc(fake_drv, 256)
    fake_drv.check("cuMemsetD8", p, 0x42, 256)
    handle = fc.CUipcMemHandle()
    fake_drv.check("cuIpcGetMemHandle", byref(handle), p)
    opened, again = c_uint64(), c_uint64()
    fake_drv.check("cuIpcOpenMemHandle", byref(opened), handle, 1)
    fake_drv.check("cuIpcOpenMemHandle", byref(again), handle, 1)
    assert opened.value == again.value != p
    assert to_host(fake_drv, opened.value, 256) == b"\x42" * 256
    fake_drv.check("cuMemsetD8", opened.value, 0x17, 1)
    assert to_host(fake_drv, p, 1) == b"\x17"
    fake_drv.check("cuIpcCloseMemHandle", opened.value)
    fake_drv.check("cuIpcCloseMemHandle", opened.value)
    assert fake_drv.cuIpcCloseMemHandle(opened.value) == CUDA_ERROR_INVALID_VALUE
    bogus = fc.CUipcMemHandle()
    assert fake_drv.cuIpcOpenMemHandle(byref(opened), bogus, 1) == CUDA_ERROR_INVALID_VALUE


# Stream-ordered allocation and pools ----------------------------------------------------------

CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 4, 5
CU_MEMPOOL_ATTR_USED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_HIGH = 7, 8


def pool_attribute(d, pool, attribute) -> int:
    value = c_uint64()
    d.check("cuMemPoolGetAttribute", pool, attribute, byref(value))
    return value.value


def test_async_alloc_and_pool_accounting(drv, ctx):
    pool = c_void_p()
    drv.check("cuDeviceGetDefaultMemPool", byref(pool), 0)
    stream = c_void_p()
    drv.check("cuStreamCreate", byref(stream), 0)
    used0 = pool_attribute(drv, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    p = c_uint64()
    drv.check("cuMemAllocAsync", byref(p), 1 << 20, stream)
    drv.check("cuMemsetD8Async", p, 1, 1 << 20, stream)
    owner = c_void_p(1)
    drv.check("cuPointerGetAttribute", byref(owner), CU_POINTER_ATTRIBUTE_CONTEXT, p)
    assert owner.value is None  # pool memory belongs to no context
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) >= used0 + (1 << 20)
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= pool_attribute(
        drv, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT
    )
    drv.check("cuMemFreeAsync", p, stream)
    drv.check("cuStreamSynchronize", stream)
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == used0
    drv.check("cuMemPoolTrimTo", pool, 0)
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH) >= used0 + (1 << 20)
    p = c_uint64(1)
    drv.check("cuMemAllocAsync", byref(p), 0, stream)  # zero bytes: allowed, a null pointer
    assert p.value == 0
    drv.check("cuMemFreeAsync", p, stream)
    drv.check("cuStreamDestroy", stream)


def test_pool_create_and_attributes(drv, ctx):
    props = fc.CUmemPoolProps(allocType=1, handleTypes=0, location=fc.CUmemLocation(1, 0))
    pool = c_void_p()
    drv.check("cuMemPoolCreate", byref(pool), byref(props))
    threshold = c_uint64(1 << 30)
    drv.check("cuMemPoolSetAttribute", pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, byref(threshold))
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 1 << 30
    p = c_uint64()
    drv.check("cuMemAllocFromPoolAsync", byref(p), 4 << 20, pool, None)
    drv.check("cuMemFreeAsync", p, None)
    drv.check("cuCtxSynchronize", None)
    # Below the release threshold the pool keeps what was freed.
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= 4 << 20
    drv.check("cuMemPoolTrimTo", pool, 0)
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0
    nonzero = c_uint64(5)
    assert (
        drv.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, byref(nonzero))
        == CUDA_ERROR_INVALID_VALUE
    )
    drv.check("cuMemPoolDestroy", pool)
    default = c_void_p()
    drv.check("cuDeviceGetDefaultMemPool", byref(default), 0)
    assert drv.cuMemPoolDestroy(default) == CUDA_ERROR_INVALID_VALUE
    bad = fc.CUmemPoolProps(allocType=0, location=fc.CUmemLocation(1, 0))
    assert drv.cuMemPoolCreate(byref(pool), byref(bad)) == CUDA_ERROR_INVALID_VALUE


def test_managed_memory_pool(drv, ctx):
    props = fc.CUmemPoolProps(allocType=2, location=fc.CUmemLocation(1, 0))  # MANAGED, device 0
    pool = c_void_p()
    drv.check("cuMemPoolCreate", byref(pool), byref(props))
    p = c_uint64()
    drv.check("cuMemAllocFromPoolAsync", byref(p), 4096, pool, None)
    drv.check("cuMemsetD8Async", p, 5, 4096, None)
    drv.check("cuCtxSynchronize", None)
    assert ctypes.string_at(p.value, 4) == b"\x05" * 4  # managed: host-accessible
    managed = ctypes.c_bool()
    drv.check("cuPointerGetAttribute", byref(managed), CU_POINTER_ATTRIBUTE_IS_MANAGED, p)
    assert managed.value
    drv.check("cuMemFreeAsync", p, None)
    drv.check("cuCtxSynchronize", None)
    drv.check("cuMemPoolDestroy", pool)
