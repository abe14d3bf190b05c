"""Issue 26, a GL window's size: out of range is refused before anything of GL or CUDA is
touched (so also where this build has no GL window support)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "size, error",
    [
        ((2**31, 2**31), ValueError),
        ((640, 2**31), ValueError),
        ((32769, 10), ValueError),
        ((0, 480), ValueError),
        ((-1, 480), ValueError),
        ((640.0, 480), TypeError),
    ],
)
def test_window_size_out_of_range_is_refused_before_any_gl_call(monkeypatch, size, error):
    from cuplug.gl import window

    def no_gl():
        raise AssertionError("the size reached GL (its module was asked for)")

    monkeypatch.setattr(window, "_canvas_module", no_gl)
    with pytest.raises(error, match="Window (width|height)"):
        window.Window(*size)


@pytest.mark.parametrize("size", [(1, 1), (640, 480), (32768, 32768)])
def test_window_sizes_in_range_go_on_to_gl(monkeypatch, size):
    from cuplug.gl import window

    class Reached(Exception):
        pass

    def gl():
        raise Reached

    monkeypatch.setattr(window, "_canvas_module", gl)
    with pytest.raises(Reached):
        window.Window(*size)
