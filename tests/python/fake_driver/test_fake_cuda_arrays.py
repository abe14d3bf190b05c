"""The fake CUDA driver through ctypes, without cuplug: CUDA arrays, copies to and from them, and
texture / surface objects (against the real driver too where one is usable: `drv`)."""

from __future__ import annotations

import ctypes

import pytest
from support import fakecuda_objects as fo
from support.fake_driver import *  # noqa: F401,F403


def make_array(d, width, height=0, depth=0, fmt=fo.CU_AD_FORMAT_FLOAT, channels=1, flags=0):
    desc = fo.CUDA_ARRAY3D_DESCRIPTOR(width, height, depth, fmt, channels, flags)
    a = c_void_p()
    d.check("cuArray3DCreate", byref(a), byref(desc))
    return a


def test_array_descriptors_come_back_as_made(drv, ctx):
    a = c_void_p()
    desc = fo.CUDA_ARRAY_DESCRIPTOR(16, 4, fo.CU_AD_FORMAT_UNSIGNED_INT8, 4)
    drv.check("cuArrayCreate", byref(a), byref(desc))
    back = fo.CUDA_ARRAY3D_DESCRIPTOR()
    drv.check("cuArray3DGetDescriptor", byref(back), a)
    assert (back.Width, back.Height, back.Depth, back.Format, back.NumChannels) == (
        16,
        4,
        0,
        fo.CU_AD_FORMAT_UNSIGNED_INT8,
        4,
    )
    drv.check("cuArrayDestroy", a)


def test_bad_array_descriptors_are_invalid_values(drv, ctx):
    a = c_void_p()
    for width, channels in ((0, 1), (8, 3)):
        desc = fo.CUDA_ARRAY3D_DESCRIPTOR(width, 0, 0, fo.CU_AD_FORMAT_FLOAT, channels, 0)
        assert drv.cuArray3DCreate(byref(a), byref(desc)) == CUDA_ERROR_INVALID_VALUE


def test_1d_array_copies_round_trip(drv, ctx):
    a = make_array(drv, 64, fmt=fo.CU_AD_FORMAT_UNSIGNED_INT8)
    b = make_array(drv, 64, fmt=fo.CU_AD_FORMAT_UNSIGNED_INT8)
    data = bytes(range(64))
    drv.check("cuMemcpyHtoA", a, 0, data, 64)
    p = alloc(drv, 64)
    drv.check("cuMemcpyAtoD", p, a, 0, 64)
    drv.check("cuMemcpyDtoA", b, 0, p, 64)
    drv.check("cuMemcpyAtoA", a, 0, b, 32, 32)
    out = ctypes.create_string_buffer(64)
    drv.check("cuMemcpyAtoH", out, a, 0, 64)
    assert out.raw == data[32:] + data[32:]
    assert drv.cuMemcpyHtoA(a, 60, data, 8) == CUDA_ERROR_INVALID_VALUE  # past its end
    for h in (a, b):
        drv.check("cuArrayDestroy", h)
    drv.check("cuMemFree", p)


def test_2d_copies_into_and_out_of_arrays(drv, ctx):
    a = make_array(drv, 8, 3, fmt=fo.CU_AD_FORMAT_FLOAT)
    rows = (c_float * (8 * 3))(*range(24))
    up = fc.CUDA_MEMCPY2D()
    up.srcMemoryType, up.srcHost, up.srcPitch = 1, ctypes.addressof(rows), 32
    up.dstMemoryType, up.dstArray = 3, a
    up.WidthInBytes, up.Height = 32, 3
    drv.check("cuMemcpy2D", byref(up))
    back = (c_float * (4 * 2))()
    down = fc.CUDA_MEMCPY2D()
    down.srcMemoryType, down.srcArray, down.srcXInBytes, down.srcY = 3, a, 8, 1
    down.dstMemoryType, down.dstHost, down.dstPitch = 1, ctypes.addressof(back), 16
    down.WidthInBytes, down.Height = 16, 2
    drv.check("cuMemcpy2D", byref(down))
    assert list(back) == [10, 11, 12, 13, 18, 19, 20, 21]
    down.srcY = 2  # rows 2 and 3 of a 3-row array
    assert drv.cuMemcpy2D(byref(down)) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuArrayDestroy", a)


def array_resource(a):
    r = fo.CUDA_RESOURCE_DESC()
    r.resType = fo.CU_RESOURCE_TYPE_ARRAY
    r.res.hArray = a
    return r


def test_texture_objects_remember_their_resource(drv, ctx):
    a = make_array(drv, 8, 8)
    r = array_resource(a)
    t = fo.CUDA_TEXTURE_DESC()
    tex = c_uint64()
    drv.check("cuTexObjectCreate", byref(tex), byref(r), byref(t), None)
    assert tex.value != 0
    back = fo.CUDA_RESOURCE_DESC()
    drv.check("cuTexObjectGetResourceDesc", byref(back), tex)
    assert back.resType == fo.CU_RESOURCE_TYPE_ARRAY and back.res.hArray == a.value
    drv.check("cuTexObjectDestroy", tex)
    drv.check("cuArrayDestroy", a)


def test_texture_over_linear_memory(drv, ctx):
    p = alloc(drv, 4096)
    r = fo.CUDA_RESOURCE_DESC()
    r.resType = fo.CU_RESOURCE_TYPE_LINEAR
    r.res.linear = fo._Linear(p, fo.CU_AD_FORMAT_FLOAT, 1, 4096)
    tex = c_uint64()
    drv.check("cuTexObjectCreate", byref(tex), byref(r), byref(fo.CUDA_TEXTURE_DESC()), None)
    drv.check("cuTexObjectDestroy", tex)
    drv.check("cuMemFree", p)


def test_surfaces_are_made_of_any_array_and_only_of_arrays(drv, ctx):
    # Documented as needing CUDA_ARRAY3D_SURFACE_LDST, yet the real driver (13.0, H100) takes an
    # array without it: cuplug's SurfaceObject refuses those itself.
    plain = make_array(drv, 8, 8)
    able = make_array(drv, 8, 8, flags=fo.CUDA_ARRAY3D_SURFACE_LDST)
    surf = c_uint64()
    for a in (plain, able):
        r = array_resource(a)
        drv.check("cuSurfObjectCreate", byref(surf), byref(r))
        drv.check("cuSurfObjectDestroy", surf)
    p = alloc(drv, 4096)
    r = fo.CUDA_RESOURCE_DESC()
    r.resType = fo.CU_RESOURCE_TYPE_LINEAR
    r.res.linear = fo._Linear(p, fo.CU_AD_FORMAT_FLOAT, 1, 4096)
    assert drv.cuSurfObjectCreate(byref(surf), byref(r)) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemFree", p)
    for h in (plain, able):
        drv.check("cuArrayDestroy", h)


def test_destroyed_arrays_and_textures_are_undefined_behaviour(fake_drv, fake_ctx):
    """The real driver's answer to a destroyed handle is not reliable (it may crash), so the fake
    reports it; only the fake can be asked."""
    a = make_array(fake_drv, 8)
    assert fake_drv.live_objects("array") == 1
    fake_drv.check("cuArrayDestroy", a)
    assert fake_drv.live_objects("array") == 0
    assert fake_drv.cuArrayDestroy(a) == CUDA_ERROR_INVALID_HANDLE
    tex = c_uint64(12345)
    assert fake_drv.cuTexObjectDestroy(tex) == CUDA_ERROR_INVALID_HANDLE
    reports = fake_drv.take_undefined_behaviour()
    assert len(reports) == 2 and "array handle" in reports[0] and "texture object" in reports[1]


def test_destroying_a_context_destroys_its_arrays_and_textures(fake_drv):
    """Fake bookkeeping (live-object counts) has no real-driver counterpart."""
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    a = make_array(fake_drv, 8, 8)
    tex = c_uint64()
    fake_drv.check(
        "cuTexObjectCreate",
        byref(tex),
        byref(array_resource(a)),
        byref(fo.CUDA_TEXTURE_DESC()),
        None,
    )
    assert (fake_drv.live_objects("array"), fake_drv.live_objects("texture")) == (1, 1)
    fake_drv.check("cuCtxDestroy", c)
    assert (fake_drv.live_objects("array"), fake_drv.live_objects("texture")) == (0, 0)
    with pytest.raises(ValueError, match="no objects of kind"):
        fake_drv.live_objects("nonsense")


def test_pitched_textures_need_aligned_starts_and_pitches(drv, ctx):
    # Measured on an H100 (driver 13.0): the start must be a multiple of TEXTURE_ALIGNMENT (512),
    # the pitch of TEXTURE_PITCH_ALIGNMENT (32).
    p = alloc(drv, 4096)
    assert p % 512 == 0
    tex = c_uint64()
    r = fo.CUDA_RESOURCE_DESC()
    r.resType = fo.CU_RESOURCE_TYPE_PITCH2D
    for start, pitch in ((p, 32), (p, 96), (p + 512, 64)):
        r.res.pitch2D = fo._Pitch2D(start, fo.CU_AD_FORMAT_FLOAT, 1, 8, 8, pitch)
        drv.check("cuTexObjectCreate", byref(tex), byref(r), byref(fo.CUDA_TEXTURE_DESC()), None)
        drv.check("cuTexObjectDestroy", tex)
    for start, pitch in ((p, 40), (p + 32, 64), (p + 256, 64)):
        r.res.pitch2D = fo._Pitch2D(start, fo.CU_AD_FORMAT_FLOAT, 1, 8, 8, pitch)
        desc = fo.CUDA_TEXTURE_DESC()
        rc = drv.cuTexObjectCreate(byref(tex), byref(r), byref(desc), None)
        assert rc == CUDA_ERROR_INVALID_VALUE, (start - p, pitch)
    drv.check("cuMemFree", p)
