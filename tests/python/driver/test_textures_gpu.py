"""CUDA arrays, texture and surface objects on a real GPU: kernels sample textures (linear
filtering against a NumPy bilinear reference, point sampling of 4-channel integer arrays), write
surfaces, and arrays round-trip through every copy for several dtypes, channel counts and shapes."""

import numpy as np
import pytest

import cuplug.driver as drv

pytestmark = pytest.mark.real_gpu


def kernel(source, name):
    from cuplug.compiler import SourceModule

    return SourceModule(source).get_function(name)


def bilinear(img, u, v):
    """CUDA's linear filtering with clamped addressing (unnormalised coordinates)."""
    h, w = img.shape
    x, y = u - 0.5, v - 0.5
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    a, b = x - x0, y - y0

    def at(yy, xx):
        return img[np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]

    return (
        (1 - a) * (1 - b) * at(y0, x0)
        + a * (1 - b) * at(y0, x0 + 1)
        + (1 - a) * b * at(y0 + 1, x0)
        + a * b * at(y0 + 1, x0 + 1)
    )


def test_linear_filtered_float_texture_matches_numpy_bilinear(gpu):
    from cuplug import gpuarray

    rng = np.random.default_rng(0)
    img = rng.uniform(0, 1, (37, 53)).astype(np.float32)
    tex = drv.TextureObject(
        drv.np_to_array(img, "C"),
        address_mode=drv.address_mode.CLAMP,
        filter_mode=drv.filter_mode.LINEAR,
    )
    n = 4096
    u = rng.uniform(-2, 55, n).astype(np.float32)
    v = rng.uniform(-2, 39, n).astype(np.float32)
    out = gpuarray.empty(n, np.float32)
    f = kernel(
        """
__global__ void sample(cudaTextureObject_t t, const float *u, const float *v, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(t, u[i], v[i]);
}""",
        "sample",
    )
    f(
        tex,
        gpuarray.to_gpu(u),
        gpuarray.to_gpu(v),
        out,
        np.int32(n),
        block=(256, 1, 1),
        grid=(16, 1),
    )
    # The hardware interpolates with 8-bit fractional weights.
    np.testing.assert_allclose(out.get(), bilinear(img, u, v), atol=5e-3)


def test_normalized_coordinates_with_wrap_addressing(gpu):
    from cuplug import gpuarray

    img = np.arange(8 * 4, dtype=np.float32).reshape(4, 8)
    tex = drv.TextureObject(
        drv.np_to_array(img, "C"), address_mode=drv.address_mode.WRAP, normalized_coords=True
    )
    out = gpuarray.empty((4, 8), np.float32)
    f = kernel(
        """
__global__ void shifted(cudaTextureObject_t t, float *out)
{
    int x = threadIdx.x, y = threadIdx.y;
    out[y * 8 + x] = tex2D<float>(t, (x + 0.5f) / 8 + 1.25f, (y + 0.5f) / 4);
}""",
        "shifted",
    )
    f(tex, out, block=(8, 4, 1))
    assert np.array_equal(out.get(), np.roll(img, -2, axis=1))  # +1.25 wraps to a shift of 2


@pytest.mark.parametrize(
    "dtype, ctype", [(np.uint8, "uchar4"), (np.int16, "short4"), (np.int32, "int4")]
)
def test_point_sampling_of_4_channel_integer_arrays_is_exact(gpu, dtype, ctype):
    from cuplug import gpuarray

    info = np.iinfo(dtype)
    img = np.random.default_rng(1).integers(info.min, info.max, (9, 11, 4), dtype=dtype)
    tex = drv.TextureObject(drv.make_multichannel_2d_array(img, "C"))
    out = gpuarray.empty(img.shape, dtype)
    f = kernel(
        f"""
__global__ void fetch(cudaTextureObject_t t, {ctype} *out)
{{
    int x = threadIdx.x, y = threadIdx.y;
    out[y * 11 + x] = tex2D<{ctype}>(t, x + 0.5f, y + 0.5f);
}}""",
        "fetch",
    )
    f(tex, out, block=(11, 9, 1))
    assert np.array_equal(out.get(), img)


def test_textures_over_gpuarrays_linear_and_pitched(gpu):
    from cuplug import gpuarray

    flat = np.arange(300, dtype=np.float32)
    t1 = drv.TextureObject(gpuarray.to_gpu(flat))
    img = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)  # rows of 256 bytes: pitched
    t2 = drv.TextureObject(gpuarray.to_gpu(img))
    out1, out2 = gpuarray.empty(300, np.float32), gpuarray.empty((16, 64), np.float32)
    f = kernel(
        """
__global__ void both(cudaTextureObject_t lin, cudaTextureObject_t pitched, float *o1, float *o2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 300) o1[i] = tex1Dfetch<float>(lin, i);
    if (i < 16 * 64) o2[i] = tex2D<float>(pitched, i % 64 + 0.5f, i / 64 + 0.5f);
}""",
        "both",
    )
    f(t1, t2, out1, out2, block=(256, 1, 1), grid=(4, 1))
    assert np.array_equal(out1.get(), flat) and np.array_equal(out2.get(), img)


def test_surface_writes_read_back_with_copies(gpu):
    desc = drv.ArrayDescriptor3D(
        64, 0, 0, drv.array_format.FLOAT, 1, drv.array3d_flags.SURFACE_LDST
    )
    line = drv.Array(desc)
    grid2 = drv.Array(
        drv.ArrayDescriptor3D(
            16, 8, 0, drv.array_format.SIGNED_INT32, 1, drv.array3d_flags.SURFACE_LDST
        )
    )
    f = kernel(
        """
__global__ void paint(cudaSurfaceObject_t line, cudaSurfaceObject_t grid)
{
    int x = threadIdx.x, y = threadIdx.y;
    if (y == 0) surf1Dwrite(x * 1.5f, line, x * 4);
    if (x < 16) surf2Dwrite(y * 100 + x, grid, x * 4, y);
}""",
        "paint",
    )
    f(drv.SurfaceObject(line), drv.SurfaceObject(grid2), block=(64, 8, 1))
    drv.Context.synchronize()
    out = np.zeros(64, np.float32)
    drv.memcpy_atoh(out, line, 0)
    assert np.array_equal(out, np.arange(64, dtype=np.float32) * 1.5)
    back = np.zeros((8, 16), np.int32)
    copy = drv.Memcpy2D()
    copy.set_src_array(grid2)
    copy.set_dst_host(back)
    copy.width_in_bytes = copy.dst_pitch = 64
    copy.height = 8
    copy(aligned=True)
    assert np.array_equal(back, np.arange(8)[:, None] * 100 + np.arange(16))


FORMATS = [(np.uint8, 1), (np.uint8, 4), (np.int16, 2), (np.float32, 1), (np.float32, 4)]


@pytest.mark.parametrize("dtype, channels", FORMATS)
def test_1d_array_copies_round_trip(gpu, dtype, channels):
    n = 1000
    data = (np.arange(n * channels) % 97).astype(dtype)
    desc = drv.ArrayDescriptor(n, 0, drv.dtype_to_array_format(dtype), channels)
    a, b = drv.Array(desc), drv.Array(desc)
    drv.memcpy_htoa(a, 0, data)
    dev = drv.mem_alloc(data.nbytes)
    drv.memcpy_atod(dev, a, 0, data.nbytes)
    drv.memcpy_dtoa(b, 0, dev, data.nbytes)
    c = drv.Array(desc)
    drv.memcpy_atoa(c, 0, b, 0, data.nbytes)
    out = np.zeros_like(data)
    drv.memcpy_atoh(out, c, 0)
    assert np.array_equal(out, data)


@pytest.mark.parametrize("dtype, channels", FORMATS)
@pytest.mark.parametrize("kind", ["2d", "3d", "layered"])
def test_structured_copies_round_trip_through_arrays(gpu, dtype, channels, kind):
    depth = {"2d": 1, "3d": 5, "layered": 3}[kind]
    shape = (depth, 7, 13, channels)
    data = (np.arange(np.prod(shape)) % 113).astype(dtype).reshape(shape)
    flags = drv.array3d_flags.LAYERED if kind == "layered" else 0
    fmt = drv.dtype_to_array_format(dtype)
    desc = drv.ArrayDescriptor3D(13, 7, 0 if kind == "2d" else depth, fmt, channels, flags)
    ary = drv.Array(desc)
    row = 13 * channels * data.itemsize
    up = drv.Memcpy3D()
    up.set_src_host(data)
    up.set_dst_array(ary)
    up.width_in_bytes = up.src_pitch = row
    up.height = up.src_height = 7
    up.depth = depth
    up()
    out = np.zeros_like(data)
    down = drv.Memcpy3D()
    down.set_src_array(ary)
    down.set_dst_host(out)
    down.width_in_bytes = down.dst_pitch = row
    down.height = down.dst_height = 7
    down.depth = depth
    down()
    assert np.array_equal(out, data)
    if kind == "2d":
        out2 = np.zeros_like(data[0])
        c2 = drv.Memcpy2D()
        c2.set_src_array(ary)
        c2.set_dst_host(out2)
        c2.width_in_bytes = c2.dst_pitch = row
        c2.height = 7
        c2(aligned=True)
        assert np.array_equal(out2, data[0])


def test_gpuarray_to_array_then_sample(gpu):
    from cuplug import gpuarray

    img = np.arange(6 * 10, dtype=np.float32).reshape(6, 10)
    tex = drv.TextureObject(drv.gpuarray_to_array(gpuarray.to_gpu(img), "C"))
    out = gpuarray.empty((6, 10), np.float32)
    f = kernel(
        """
__global__ void copy(cudaTextureObject_t t, float *out)
{
    out[threadIdx.y * 10 + threadIdx.x] = tex2D<float>(t, threadIdx.x + 0.5f, threadIdx.y + 0.5f);
}""",
        "copy",
    )
    f(tex, out, block=(10, 6, 1))
    assert np.array_equal(out.get(), img)
