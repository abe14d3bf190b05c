"""Interop on a real GPU and NVIDIA's GL through headless EGL (the GPU machine, docs/gl.md):
kernels write registered GL buffers, GL reads back exactly what NumPy computes; an image mapped
as a CUDA array; the driver's answers to mapping misuse (the fake driver's model,
tests/fake_driver/graphics.cpp, is checked against them here)."""

from __future__ import annotations

import numpy as np
import pytest

import cuplug.driver as cuda

pytestmark = pytest.mark.real_gpu

FILL = r"""
extern "C" __global__ void fill(uchar4 *pixels, int width, int height, float t) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  pixels[y * width + x] = make_uchar4(x & 255, y & 255, (x + y + int(t)) & 255, 255);
}
extern "C" __global__ void ramp(float4 *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = make_float4(i, -i, 0.5f * i, 1.0f);
}
"""


@pytest.fixture(scope="module")
def kernels():
    from cuplug.compiler import SourceModule

    cuda.init()
    context = cuda.Device(0).make_context()
    module = SourceModule(FILL)
    yield module.get_function("fill"), module.get_function("ramp")
    cuda.Context.pop()
    context.detach()


def expected_pixels(w, h, t):
    y, x = np.mgrid[0:h, 0:w]
    out = np.empty((h, w, 4), np.uint8)
    out[..., 0], out[..., 1] = x & 255, y & 255
    out[..., 2], out[..., 3] = (x + y + int(t)) & 255, 255
    return out


@pytest.fixture
def window(kernels, headless):
    from cuplug.gl import Window

    win = Window(96, 64, headless=True, pixels=True, vertices=1000)
    yield win
    win.close()


@pytest.fixture
def pixels_only(kernels, headless):
    # No vertex buffer: its points (all at the origin before a kernel writes them) would be drawn
    # over the image, one white pixel in the middle (seen on the H100).
    from cuplug.gl import Window

    win = Window(96, 64, headless=True, pixels=True)
    yield win
    win.close()


def test_a_kernel_writes_the_pixel_buffer_and_gl_shows_exactly_that(kernels, pixels_only, tmp_path):
    fill, _ = kernels
    window = pixels_only
    w, h = window.width, window.height
    with window.frame() as f:
        assert f.pixels.shape == (h, w, 4) and f.pixels.dtype == np.uint8
        fill(
            f.pixels,
            np.int32(w),
            np.int32(h),
            np.float32(7),
            block=(16, 16, 1),
            grid=((w + 15) // 16, (h + 15) // 16),
        )
    expected = expected_pixels(w, h, 7)
    assert (window.download("pixels").reshape(h, w, 4) == expected).all()  # glGetBufferSubData
    assert (window.read_pixels() == expected).all()  # glReadPixels after drawing the texture
    window.save_png(tmp_path / "fill.png")


def test_a_kernel_writes_the_vertex_buffer(kernels, window):
    _, ramp = kernels
    with window.frame() as f:
        ramp(f.vertices, np.int32(1000), block=(256, 1, 1), grid=(4, 1))
    i = np.arange(1000, dtype=np.float32)
    expected = np.stack([i, -i, 0.5 * i, np.ones_like(i)], axis=1)
    assert (window.download("vertices", np.float32).reshape(1000, 4) == expected).all()


def test_the_real_driver_answers_mapping_misuse_as_the_fake_does(window):
    from cuplug import gl

    buffer = gl.RegisteredBuffer(window._canvas.create_buffer(256))
    m = buffer.map()
    assert m.device_ptr_and_size()[1] == 256
    # Below cuplug's own checks: the driver itself.
    backend = gl._registered._backend()
    with pytest.raises(cuda.Error, match="cuGraphicsMapResources"):
        backend.map([buffer.handle])
    m.unmap()
    with pytest.raises(cuda.Error, match="cuGraphicsUnmapResources"):
        backend.unmap([buffer.handle])
    with pytest.raises(cuda.Error, match="cuGraphicsResourceGetMappedPointer"):
        backend.mapped_pointer(buffer.handle)
    buffer.map()
    buffer.unregister()  # while mapped
    again = gl.RegisteredBuffer(buffer.gl_handle())
    with again.map() as m2:
        assert m2.device_ptr_and_size()[1] == 256
    again.unregister()


def test_an_image_maps_to_a_cuda_array_gl_then_draws(window):
    from cuplug import gl

    w, h = window.width, window.height
    texture = window._canvas.create_texture(w, h)
    image = gl.RegisteredImage(texture, 0x0DE1, gl.graphics_map_flags.WRITE_DISCARD)
    picture = expected_pixels(w, h, 3)
    with image.map() as m:
        array = m.array(0, 0)
        d = array.get_descriptor_3d()
        assert (d.width, d.height, d.num_channels) == (w, h, 4)
        copy = cuda.Memcpy2D()
        copy.set_src_host(picture)
        copy.set_dst_array(array)
        copy.width_in_bytes = copy.src_pitch = w * 4
        copy.height = h
        copy(aligned=True)
    image.unregister()
    canvas = window._canvas
    canvas.clear(0, 0, 0, 1)
    canvas.draw_texture(texture)
    assert (window.read_pixels() == picture).all()
