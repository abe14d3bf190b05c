#!/usr/bin/env python3
"""simpleGL (the CUDA samples'): a kernel writes a 256x256 sine-wave mesh into a GL vertex buffer
each frame; GL draws it as points. Windowed, or --headless (EGL, no display) saving a PNG."""
# example-test: without-gpu

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

KERNEL = r"""
extern "C" __global__ void sine_wave(float4 *pos, unsigned width, unsigned height, float time) {
  unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  float u = x / (float)width * 2.0f - 1.0f, v = y / (float)height * 2.0f - 1.0f;
  float w = sinf(u * 4.0f + time) * cosf(v * 4.0f + time) * 0.5f;
  pos[y * width + x] = make_float4(u, w, v, 1.0f);
}
"""
MESH = 256


def view_matrix(angle_x=-0.5, angle_y=0.6, scale=0.7):
    """Column-major 4x4: rotate about y, then x, then scale (what the sample's view does)."""
    cx, sx, cy, sy = math.cos(angle_x), math.sin(angle_x), math.cos(angle_y), math.sin(angle_y)
    rx = np.array([[1, 0, 0, 0], [0, cx, -sx, 0], [0, sx, cx, 0], [0, 0, 0, 1]], np.float32)
    ry = np.array([[cy, 0, sy, 0], [0, 1, 0, 0], [-sy, 0, cy, 0], [0, 0, 0, 1]], np.float32)
    m = np.diag([scale, scale, scale, 1]).astype(np.float32) @ rx @ ry
    return m.T.copy()  # column-major for GL


def gpu_or_reason():
    try:
        import cuplug.driver as cuda

        cuda.init()
        if cuda.Device.count() == 0:
            return "no CUDA device"
        import cuplug.gl  # noqa: F401 - ImportError says why GL interop is missing
    except Exception as e:  # noqa: BLE001 - any reason to stop is reported
        return f"{type(e).__name__}: {e}"
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--headless", action="store_true", help="no window: EGL, save a PNG")
    p.add_argument("--frames", type=int, help="stop after N frames (headless: 30)")
    p.add_argument(
        "--png", help="save the last frame (headless: default simple_gl.png; windowed: when given)"
    )
    args = p.parse_args(argv)
    reason = gpu_or_reason()
    if reason:
        print(f"simple_gl needs an NVIDIA GPU with OpenGL interop: {reason}")
        return 0
    from cuplug.compiler import SourceModule
    from cuplug.gl import Window

    headless = args.headless or not os.environ.get("DISPLAY")
    frames = args.frames or (30 if headless else None)
    win = Window(
        512,
        512,
        "simpleGL (cuplug)",
        headless=headless,
        vertices=MESH * MESH,
        color=(1.0, 0.5, 0.0, 1.0),
        transform=view_matrix(),
    )
    sine_wave = SourceModule(KERNEL).get_function("sine_wave")

    def draw(frame):
        sine_wave(
            frame.vertices,
            np.uint32(MESH),
            np.uint32(MESH),
            np.float32(frame.index / 10),
            block=(16, 16, 1),
            grid=(MESH // 16, MESH // 16),
            stream=frame.stream,
        )

    drawn = win.run(draw, frames=frames, report_every=1.0)
    print(f"simple_gl: {drawn} frames, last {win.frame_time * 1000:.2f} ms ({win.describe()})")
    png = args.png or ("simple_gl.png" if headless else None)
    if png:
        pixels = win.save_png(png)
        lit = int((pixels[..., 0] > 128).sum())
        print(f"simple_gl: wrote {png} ({lit} orange pixels)")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
