"""CUDA arrays, copies to and from them, texture and surface objects: ownership, state, errors
and byte round trips (the fake driver moves real bytes; sampling needs the GPU tests)."""

import gc

import numpy as np
import pytest

import cuplug.driver as drv

pytestmark = pytest.mark.gpu


def array_2d(width=8, height=4, fmt=None, channels=1, flags=0):
    fmt = drv.array_format.FLOAT if fmt is None else fmt
    if flags:
        return drv.Array(drv.ArrayDescriptor3D(width, height, 0, fmt, channels, flags))
    return drv.Array(
        drv.ArrayDescriptor(width=width, height=height, format=fmt, num_channels=channels)
    )


def read_2d(ary, like):
    """A 2D array's texels through Memcpy2D (memcpy_atoh is for 1D arrays)."""
    out = np.zeros_like(like)
    copy = drv.Memcpy2D()
    copy.set_src_array(ary)
    copy.set_dst_host(out)
    copy.width_in_bytes = copy.dst_pitch = out.strides[0]
    copy.height = out.shape[0]
    copy(aligned=True)
    return out


# ---- descriptors and arrays ---------------------------------------------------------------------


def test_descriptor_fields_round_trip_as_pycuda_sets_them():
    d = drv.ArrayDescriptor()
    d.width, d.height, d.format, d.num_channels = 16, 4, drv.array_format.UNSIGNED_INT8, 4
    assert (d.width, d.height, d.format, d.num_channels) == (
        16,
        4,
        drv.array_format.UNSIGNED_INT8,
        4,
    )
    d3 = drv.ArrayDescriptor3D()
    d3.depth = 3
    d3.flags |= drv.array3d_flags.SURFACE_LDST
    assert d3.depth == 3 and d3.flags == drv.array3d_flags.SURFACE_LDST
    assert "depth=3" in repr(d3)


def test_array_reports_its_descriptors(ctx):
    a = array_2d(10, 3, drv.array_format.SIGNED_INT16, 2)
    d = a.get_descriptor()
    assert (d.width, d.height, d.format, d.num_channels) == (
        10,
        3,
        drv.array_format.SIGNED_INT16,
        2,
    )
    d3 = a.get_descriptor_3d()
    assert (d3.width, d3.height, d3.depth, d3.flags) == (10, 3, 0, 0)
    assert a.nbytes == 10 * 3 * 2 * 2 and a.handle != 0


def test_array_is_destroyed_when_its_last_reference_goes(ctx, fake):
    before = fake.live_objects("array")
    a = array_2d()
    assert fake.live_objects("array") == before + 1
    del a
    gc.collect()
    assert fake.live_objects("array") == before


def test_free_twice_is_harmless_and_a_freed_array_is_refused(ctx, fake):
    a = array_2d()
    a.free()
    a.free()  # PyCUDA: a second free does nothing
    with pytest.raises(drv.LogicError, match="array was freed"):
        _ = a.handle
    with pytest.raises(drv.LogicError, match="array was freed"):
        drv.memcpy_htoa(a, 0, np.zeros(4, np.float32))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_channels": 3}, "num_channels must be 1, 2 or 4"),
        ({"width": 0}, "width must be at least 1"),
    ],
)
def test_bad_descriptors_are_refused_before_the_driver(ctx, kwargs, match):
    with pytest.raises(ValueError, match=match):
        drv.Array(drv.ArrayDescriptor(**{"width": 4, "height": 4, **kwargs}))


def test_unknown_format_is_refused_with_its_value(ctx):
    d = drv.ArrayDescriptor(4, 4)
    d.format = 0x99
    with pytest.raises(ValueError, match="set descriptor.format"):
        drv.Array(d)


# ---- copies -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_htoa_atoh_dtoa_atod_atoa_round_trip(ctx, dtype):
    fmt = drv.dtype_to_array_format(dtype)
    data = (np.arange(64) * 3 % 120).astype(dtype)
    a = drv.Array(drv.ArrayDescriptor(64, 0, fmt, 1))
    drv.memcpy_htoa(a, 0, data)
    back = np.zeros_like(data)
    drv.memcpy_atoh(back, a, 0)
    assert np.array_equal(back, data)
    dev = drv.mem_alloc(data.nbytes)
    drv.memcpy_atod(dev, a, 0, data.nbytes)
    b = drv.Array(drv.ArrayDescriptor(64, 0, fmt, 1))
    drv.memcpy_dtoa(b, 0, dev, data.nbytes)
    c = drv.Array(drv.ArrayDescriptor(64, 0, fmt, 1))
    drv.memcpy_atoa(c, 0, b, 0, data.nbytes)
    out = np.zeros_like(data)
    drv.memcpy_atoh(out, c, 0)
    assert np.array_equal(out, data)


def test_offsets_are_bytes_and_async_forms_take_a_stream(ctx):
    a = drv.Array(drv.ArrayDescriptor(16, 0, drv.array_format.UNSIGNED_INT8, 1))
    s = drv.Stream()
    drv.memcpy_htoa_async(a, 4, np.arange(1, 9, dtype=np.uint8), s)
    out = np.zeros(16, np.uint8)
    drv.memcpy_atoh_async(out, a, 0, s)
    s.synchronize()
    assert list(out) == [0] * 4 + list(range(1, 9)) + [0] * 4


def test_copies_outside_the_array_are_refused(ctx):
    a = drv.Array(drv.ArrayDescriptor(16, 0, drv.array_format.UNSIGNED_INT8, 1))
    with pytest.raises(ValueError, match=r"bytes \[10, 18\) lie outside the 16-byte Array"):
        drv.memcpy_htoa(a, 10, np.zeros(8, np.uint8))
    with pytest.raises(TypeError, match="ary must be an Array"):
        drv.memcpy_htoa(123, 0, np.zeros(8, np.uint8))


def test_memcpy_2d_and_3d_to_and_from_arrays(ctx):
    data = np.arange(5 * 7, dtype=np.float32).reshape(5, 7)
    a = drv.matrix_to_array(data, "C")
    back = np.zeros_like(data)
    copy = drv.Memcpy2D()
    copy.set_src_array(a)
    copy.set_dst_host(back)
    copy.width_in_bytes = copy.dst_pitch = data.strides[0]
    copy.height = 5
    copy(aligned=True)
    assert np.array_equal(back, data)

    cube = np.arange(3 * 4 * 6, dtype=np.int32).reshape(3, 4, 6)
    a3 = drv.np_to_array(cube, "C")
    assert a3.get_descriptor_3d().depth == 3
    out = np.zeros_like(cube)
    c3 = drv.Memcpy3D()
    c3.set_src_array(a3)
    c3.set_dst_host(out)
    c3.width_in_bytes = c3.dst_pitch = cube.strides[1]
    c3.height = c3.dst_height = 4
    c3.depth = 3
    c3()
    assert np.array_equal(out, cube)


def test_pycuda_helpers_make_the_arrays_pycuda_makes(ctx):
    img = np.arange(4 * 6 * 4, dtype=np.uint8).reshape(4, 6, 4)
    a = drv.make_multichannel_2d_array(img, "C")
    d = a.get_descriptor()
    assert (d.width, d.height, d.num_channels) == (6, 4, 4)
    assert np.array_equal(read_2d(a, img), img)
    layered = drv.np_to_array(np.ones((4, 6), np.float32), "C", allowSurfaceBind=True)
    flags = layered.get_descriptor_3d().flags
    assert flags & drv.array3d_flags.SURFACE_LDST and flags & drv.array3d_flags.LAYERED
    doubles = drv.np_to_array(np.ones((2, 3)), "C")
    assert doubles.get_descriptor().format == drv.array_format.SIGNED_INT32
    with pytest.raises(drv.LogicError, match="order must be either F or C"):
        drv.np_to_array(np.ones((2, 3), np.float32), "X")
    with pytest.raises(TypeError, match="cannot convert dtype"):
        drv.dtype_to_array_format(np.int64)


def test_gpuarray_to_array_copies_on_the_device(ctx):
    from cuplug import gpuarray

    data = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = drv.gpuarray_to_array(gpuarray.to_gpu(data), "C")
    assert np.array_equal(read_2d(a, data), data)


# ---- texture and surface objects ----------------------------------------------------------------


def test_texture_object_keeps_its_array_alive(ctx, fake):
    arrays = fake.live_objects("array")
    tex = drv.TextureObject(array_2d(), filter_mode=drv.filter_mode.LINEAR)
    gc.collect()
    assert fake.live_objects("array") == arrays + 1  # the texture holds it
    assert fake.live_objects("texture") >= 1
    assert int(tex) == tex.handle != 0 and isinstance(tex.source, drv.Array)
    textures = fake.live_objects("texture")
    del tex
    gc.collect()
    assert fake.live_objects("texture") == textures - 1
    assert fake.live_objects("array") == arrays


def test_destroyed_texture_is_refused_and_destroy_twice_is_harmless(ctx):
    with drv.TextureObject(array_2d()) as tex:
        pass
    tex.destroy()
    with pytest.raises(drv.LogicError, match="it was destroyed"):
        int(tex)


def test_texture_over_gpuarrays_linear_and_pitched(ctx, fake):
    from cuplug import gpuarray

    flat = gpuarray.to_gpu(np.arange(256, dtype=np.float32))
    t1 = drv.TextureObject(flat)
    rows = gpuarray.to_gpu(np.zeros((8, 32), np.uint8))
    t2 = drv.TextureObject(rows, read_mode="normalized_float", filter_mode=drv.filter_mode.LINEAR)
    assert t1.source is flat and t2.source is rows
    with pytest.raises(ValueError, match="cannot be read as a texture"):
        drv.TextureObject(gpuarray.to_gpu(np.zeros((2, 3, 4), np.float32)))
    with pytest.raises(TypeError, match="no 64-bit element formats"):
        drv.TextureObject(gpuarray.to_gpu(np.zeros(8)))


def test_texture_memory_must_be_aligned_as_the_driver_wants(ctx):
    from cuplug import gpuarray

    flat = gpuarray.to_gpu(np.arange(1024, dtype=np.float32))
    with pytest.raises(ValueError, match="multiple of 512 bytes.* 4 bytes past"):
        drv.TextureObject(flat[1:])
    drv.TextureObject(flat[128:])  # 512 bytes in
    rows = gpuarray.to_gpu(np.zeros((8, 10), np.float32))  # 40-byte rows
    with pytest.raises(ValueError, match="multiple of 32 bytes, not 40"):
        drv.TextureObject(rows)
    mem = drv.mem_alloc(4096)
    with pytest.raises(ValueError, match="texture alignment"):
        drv.TextureObject(int(mem) + 32, format=drv.array_format.FLOAT, size_in_bytes=1024)


def test_texture_over_a_raw_pointer_needs_its_layout(ctx):
    mem = drv.mem_alloc(1024)
    tex = drv.TextureObject(mem, format=drv.array_format.FLOAT, num_channels=1, size_in_bytes=1024)
    assert tex.handle
    with pytest.raises(TypeError, match="needs its layout"):
        drv.TextureObject(mem)
    with pytest.raises(TypeError, match="an Array has its own layout"):
        drv.TextureObject(array_2d(), format=drv.array_format.FLOAT)


def test_linear_filtering_of_integers_read_as_integers_is_refused(ctx):
    a = array_2d(fmt=drv.array_format.UNSIGNED_INT8, channels=4)
    with pytest.raises(ValueError, match="read_mode='normalized_float'"):
        drv.TextureObject(a, filter_mode=drv.filter_mode.LINEAR)
    drv.TextureObject(a, filter_mode=drv.filter_mode.LINEAR, read_mode="normalized_float")
    with pytest.raises(ValueError, match="read_mode must be"):
        drv.TextureObject(a, read_mode="raw")
    with pytest.raises(ValueError, match="1 to 3"):
        drv.TextureObject(a, address_mode=[drv.address_mode.WRAP] * 4)


def test_surface_needs_an_array_made_for_surfaces(ctx, fake):
    with pytest.raises(ValueError, match="SURFACE_LDST"):
        drv.SurfaceObject(array_2d())
    a = array_2d(flags=drv.array3d_flags.SURFACE_LDST)
    surf = drv.SurfaceObject(a)
    assert surf.source is a and fake.live_objects("surface") >= 1
    with pytest.raises(TypeError, match="must be an Array"):
        drv.SurfaceObject(drv.mem_alloc(16))


def test_texture_objects_pass_to_kernels_as_64_bit_handles(ctx, fake):
    from cuplug.compiler import SourceModule

    mod = SourceModule(
        'extern "C" __global__ void k(cudaTextureObject_t t, cudaSurfaceObject_t s, int n) {}',
        no_extern_c=True,
    )
    k = mod.get_function("k")
    tex = drv.TextureObject(array_2d())
    surf = drv.SurfaceObject(array_2d(flags=drv.array3d_flags.SURFACE_LDST))
    k(tex, surf, np.int32(3), block=(1, 1, 1))
    params = fake.last_launch().params
    assert np.frombuffer(params[:16], np.uint64).tolist() == [tex.handle, surf.handle]
    k.prepare("QQi")
    k.prepared_call((1, 1), (1, 1, 1), tex, surf, 3)
    assert fake.last_launch().params[:16] == params[:16]


def test_texture_references_say_what_replaces_them():
    with pytest.raises(drv.NotSupportedError, match="TextureObject"):
        drv.TextureReference()
    with pytest.raises(drv.NotSupportedError, match="TextureObject"):
        drv.bind_array_to_texref(None, None)
