"""PyCUDA's own GL example (examples/from-wiki/gl_interop.py: a GLUT window, a teapot rendered by
GL, read into a pixel buffer, inverted by a CUDA kernel through pycuda.gl.BufferObject, drawn back)
runs unchanged through cuplug's compat alias for a number of frames on a real GPU, in a window
under an X server. The script is PyCUDA's users', not ours: it is taken from the folder
$CUPLUG_PYCUDA_EXAMPLES (default .pycuda-examples/ in the repository, docs/compat.md says how to
fetch it). It needs PyOpenGL with GLUT and GLU (Debian: freeglut3-dev, libglu1-mesa-dev)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from cuplug.gl import _png

pytestmark = pytest.mark.real_gpu
ROOT = pathlib.Path(__file__).resolve().parents[3]
FRAMES = 30

# Runs the script through the compat alias; the 30th buffer swap reads the frame back (the back
# buffer, which holds what was just drawn), saves it and ends the process: GLUT's main loop never
# returns, and the script's own error handler ends with exit status 0, so success is the line.
# The script calls time.clock(), which Python 3.8 removed (it fails so under PyCUDA too, at every
# commit of PyCUDA up to today's): the runner puts it back as time.perf_counter, nothing else.
RUNNER = r"""
import os, runpy, sys, time
import numpy as np
time.clock = getattr(time, "clock", time.perf_counter)
import cuplug.compat.pycuda
import OpenGL.GLUT as glut
from OpenGL import GL
from cuplug.gl import _png

path, frames, png = sys.argv[1], int(sys.argv[2]), sys.argv[3]
count = [0]
swap = glut.glutSwapBuffers

def counted_swap():
    count[0] += 1
    if count[0] == frames:
        w, h = glut.glutGet(glut.GLUT_WINDOW_WIDTH), glut.glutGet(glut.GLUT_WINDOW_HEIGHT)
        data = GL.glReadPixels(0, 0, w, h, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE)
        image = np.frombuffer(data, np.uint8).reshape(h, w, 4)[::-1].copy()
        image[..., 3] = 255  # the script's kernel inverts RGB and leaves alpha 0: show it opaque
        _png.write(png, image)
        print(f"gl_interop: {frames} frames drawn, the last saved", flush=True)
        os._exit(0)
    swap()

glut.glutSwapBuffers = counted_swap  # the script's `from OpenGL.GLUT import *` takes this one
sys.argv = [path]
runpy.run_path(path, run_name="__main__")
"""


def script():
    folder = pathlib.Path(os.environ.get("CUPLUG_PYCUDA_EXAMPLES") or ROOT / ".pycuda-examples")
    path = folder / "from-wiki" / "gl_interop.py"
    if not path.is_file():
        pytest.skip(
            f"PyCUDA's examples are not in {folder} (docs/compat.md says how to fetch them)"
        )
    return path


def test_pycudas_gl_interop_example_draws_its_inverted_teapot(windowed, tmp_path):
    path = script()
    probe = subprocess.run(
        [sys.executable, "-c", "import OpenGL.GLUT as g, OpenGL.GLU; g.glutInit()"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0:
        pytest.skip(f"PyOpenGL with GLUT and GLU is not usable here: {probe.stderr.strip()[-300:]}")
    png = pathlib.Path(os.environ.get("CUPLUG_GL_PNG_DIR") or tmp_path) / "pycuda_gl_interop.png"
    png.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, str(path), str(FRAMES), str(png)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    out = f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert f"gl_interop: {FRAMES} frames drawn" in proc.stdout, out
    assert "Traceback" not in proc.stdout + proc.stderr, out
    pixels = _png.read(png)
    colours = np.unique(pixels[..., :3].reshape(-1, 3), axis=0)
    # A lit teapot, inverted by the kernel: many shades, and the corner shows the script's clear
    # colour (0.1, 0.1, 0.5) = (26, 26, 128) inverted by the kernel: (229, 229, 127).
    assert len(colours) > 50, f"{len(colours)} colours: a blank or flat frame\n{out}"
    corner = pixels[0, 0, :3].astype(int)
    assert (abs(corner - (229, 229, 127)) <= 1).all(), f"corner {corner}: not inverted\n{out}"
