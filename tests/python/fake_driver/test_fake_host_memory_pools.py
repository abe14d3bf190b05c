"""The fake CUDA driver through ctypes, without cuplug: host, managed and registered memory, pools.

Behaviour tests run against the fake and, where one is usable, the real driver too (`drv` is
parametrized); tests of fake-only conventions use `fake_drv`.
"""

from __future__ import annotations

from support.fake_driver import *  # noqa: F401,F403

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
