"""cuplug.gl.Window without CUDA (CI: Xvfb with Mesa, or headless EGL with Mesa): opens a window,
fills its pixel and vertex buffers from the host, draws, and reads back the expected pixels;
PNG files written and read back."""

from __future__ import annotations

import numpy as np
import pytest

RED, BLUE, GREEN = (255, 0, 0, 255), (0, 0, 255, 255), (0, 255, 0, 255)


def draw_known_picture(headless):
    from cuplug.gl import Window

    w, h = 64, 48
    win = Window(
        w,
        h,
        headless=headless,
        visible=False,
        interop=False,
        pixels=True,
        vertices=3,
        vertex_components=2,
        mode="triangles",
        color=(0, 1, 0, 1),
    )
    image = np.zeros((h, w, 4), np.uint8)
    image[: h // 2] = RED  # row 0 is the top
    image[h // 2 :] = BLUE
    win.upload("pixels", image)
    # A small triangle around the centre, in normalised device coordinates.
    win.upload("vertices", np.array([[-0.2, -0.2], [0.2, -0.2], [0.0, 0.2]], np.float32))
    win.draw()
    return win, win.read_pixels()


def check_picture(pixels):
    h, w = pixels.shape[:2]
    assert tuple(pixels[2, 2]) == RED, pixels[2, 2]
    assert tuple(pixels[h - 3, w - 3]) == BLUE, pixels[h - 3, w - 3]
    assert tuple(pixels[h // 2, w // 2]) == GREEN, pixels[h // 2, w // 2]


def test_a_window_draws_a_host_filled_texture_and_vertices(windowed, tmp_path):
    win, pixels = draw_known_picture(headless=False)
    try:
        assert "GLFW window" in win.describe()
        check_picture(pixels)
        from cuplug.gl import _png

        saved = win.save_png(tmp_path / "w.png")
        assert (saved == pixels).all() and (_png.read(tmp_path / "w.png") == pixels).all()
        assert (win.download("pixels").reshape(pixels.shape)[0, 0] == RED).all()
    finally:
        win.close()


def test_headless_egl_draws_the_same_picture(headless):
    try:
        win, pixels = draw_known_picture(headless=True)
    except RuntimeError as e:  # an EGL without a usable device (no Mesa, no NVIDIA)
        pytest.skip(f"no headless GL here: {e}")
    try:
        assert "headless" in win.describe()
        check_picture(pixels)
    finally:
        win.close()


def test_frame_needs_interop(windowed):
    from cuplug import _core
    from cuplug.gl import Window

    win = Window(8, 8, visible=False, interop=False, pixels=True)
    try:
        with pytest.raises(_core.LogicError, match="interop=False"):
            with win.frame():
                pass
    finally:
        win.close()


def test_bad_window_arguments_are_named(any_window):
    gl = pytest.importorskip("cuplug.gl")
    with pytest.raises(ValueError, match="mode 'quads'"):
        gl.Window(8, 8, interop=False, mode="quads")


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_an_image_drawn_straight_from_its_pixel_buffer_is_the_texture_path_picture(windowed, dtype):
    """The pixel buffer drawn without a copy (a buffer texture read by a shader, what Window.draw
    does) gives exactly the picture of the texture it replaces, every texel in place."""
    from cuplug.gl import Window

    w, h = 37, 23  # odd sizes: no texel may be off by one
    win = Window(w, h, visible=False, interop=False, pixels=True, pixel_dtype=dtype)
    try:
        rng = np.random.default_rng(7)
        image = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
        image[..., 3] = 255
        win.upload("pixels", image if dtype == np.uint8 else (image / 255).astype(np.float32))
        canvas, pixels = win._canvas, win._buffers["pixels"]
        assert canvas.draw_buffer_image(pixels, w, h, dtype == np.float32)
        straight = win.read_pixels()
        canvas.clear(0, 0, 0, 1)
        canvas.texture_from_buffer(win._texture, pixels, w, h, dtype == np.float32)
        canvas.draw_texture(win._texture)
        copied = win.read_pixels()
        assert (straight == image).all() and (copied == image).all()
    finally:
        win.close()
