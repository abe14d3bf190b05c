"""Each examples/gl script runs a few frames on a real GPU, headless (EGL) and in a window (GLX
under an X server: $DISPLAY or an Xvfb started by conftest), and its PNG holds what the example
draws. PNG files go to $CUPLUG_GL_PNG_DIR when set (to look at them), else to a temporary folder;
windowed ones are named <example>-windowed.png."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from cuplug.gl import _png

pytestmark = pytest.mark.real_gpu
EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples" / "gl"


@pytest.fixture(params=["headless", "windowed"])
def mode(request):
    """Each example headless and in a window; each mode skips with the reason where missing."""
    request.getfixturevalue(request.param)
    return request.param


def run_example(name, out_dir, mode):
    suffix = "" if mode == "headless" else f"-{mode}"
    png = pathlib.Path(os.environ.get("CUPLUG_GL_PNG_DIR") or out_dir) / f"{name}{suffix}.png"
    png.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / f"{name}.py"),
            *(["--headless"] if mode == "headless" else []),
            "--frames",
            "5",
            "--png",
            str(png),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"{name} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "needs an NVIDIA GPU" not in proc.stdout, proc.stdout
    # Each example names its GL context (Window.describe()): the mode asked for is the one it got.
    assert ("GLFW window" if mode == "windowed" else "headless") in proc.stdout, proc.stdout
    return proc.stdout, _png.read(png)


def test_simple_gl_draws_an_orange_mesh(mode, tmp_path):
    out, pixels = run_example("simple_gl", tmp_path, mode)
    orange = (pixels[..., 0] == 255) & np.isin(pixels[..., 1], (127, 128)) & (pixels[..., 2] == 0)
    assert orange.sum() > 5000, out  # a mesh of 65536 points, not a blank frame
    assert (pixels[0, 0] == (0, 0, 0, 255)).all()  # the background corner stays black


def test_game_of_life_matches_numpy_and_shows_only_its_two_colours(mode, tmp_path):
    out, pixels = run_example("game_of_life", tmp_path, mode)
    assert "board True, pixels True" in out, out
    white = (pixels == (255, 255, 255, 255)).all(axis=2)
    blue = (pixels == (0, 0, 96, 255)).all(axis=2)
    assert (white | blue).all() and white.any() and blue.any()


def test_particles_light_up_a_ring(mode, tmp_path):
    out, pixels = run_example("particles", tmp_path, mode)
    lit = pixels[..., :3].max(axis=2) > 60
    assert lit.sum() > 2000, out
    h, w = lit.shape
    assert lit[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4].any()
    assert np.unique(pixels[..., 1][lit]).tolist() == [80]  # the kernel's green channel
