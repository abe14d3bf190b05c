#!/usr/bin/env python3
"""Conway's Game of Life on the GPU, drawn through a pixel buffer: each frame a kernel steps the
board and writes the window's RGBA pixels (a GPUArray over the mapped PBO); GL copies the PBO to
a texture without a host round trip. The first step is checked against NumPy. Windowed, or
--headless (EGL, no display) saving a PNG."""
# example-test: without-gpu

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

KERNEL = r"""
extern "C" __global__ void life(const unsigned char *board, unsigned char *next, uchar4 *pixels,
                                int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  int n = 0;
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx)
      if (dx || dy) n += board[((y + dy + height) % height) * width + (x + dx + width) % width];
  unsigned char alive = board[y * width + x];
  unsigned char now = (n == 3 || (alive && n == 2)) ? 1 : 0;
  next[y * width + x] = now;
  pixels[y * width + x] = now ? make_uchar4(255, 255, 255, 255) : make_uchar4(0, 0, 96, 255);
}
"""


def numpy_step(board):
    """One Game of Life step with wrap-around edges."""
    n = sum(np.roll(np.roll(board, dy, 0), dx, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    n = n - board
    return ((n == 3) | ((board == 1) & (n == 2))).astype(np.uint8)


def colours(board):
    out = np.empty(board.shape + (4,), np.uint8)
    out[board == 1] = (255, 255, 255, 255)
    out[board == 0] = (0, 0, 96, 255)
    return out


def gpu_or_reason():
    try:
        import cuplug.driver as cuda

        cuda.init()
        if cuda.Device.count() == 0:
            return "no CUDA device"
        import cuplug.gl  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--headless", action="store_true", help="no window: EGL, save a PNG")
    p.add_argument("--frames", type=int, help="stop after N frames (headless: 30)")
    p.add_argument(
        "--png",
        help="save the last frame (headless: default game_of_life.png; windowed: when given)",
    )
    p.add_argument("--size", type=int, nargs=2, default=(512, 384), metavar=("W", "H"))
    args = p.parse_args(argv)
    reason = gpu_or_reason()
    if reason:
        print(f"game_of_life needs an NVIDIA GPU with OpenGL interop: {reason}")
        return 0
    from cuplug import gpuarray
    from cuplug.compiler import SourceModule
    from cuplug.gl import Window

    w, h = args.size
    headless = args.headless or not os.environ.get("DISPLAY")
    frames = args.frames or (30 if headless else None)
    start = (np.random.default_rng(12).random((h, w)) < 0.3).astype(np.uint8)
    # The window first: it makes the CUDA context current when none is.
    win = Window(w, h, "Game of Life (cuplug)", headless=headless, pixels=True)
    board, scratch = gpuarray.to_gpu(start), gpuarray.empty_like(gpuarray.to_gpu(start))
    life = SourceModule(KERNEL).get_function("life")
    checked = {}

    def step(frame):
        nonlocal board, scratch
        life(
            board,
            scratch,
            frame.pixels,
            np.int32(w),
            np.int32(h),
            block=(16, 16, 1),
            grid=((w + 15) // 16, (h + 15) // 16),
            stream=frame.stream,
        )
        board, scratch = scratch, board
        if frame.index == 0:  # the first step, against NumPy
            expected = numpy_step(start)
            checked["board"] = bool((board.get() == expected).all())
            checked["pixels"] = bool((frame.pixels.get() == colours(expected)).all())

    drawn = win.run(step, frames=frames, report_every=1.0)
    print(f"game_of_life: {drawn} frames, last {win.frame_time * 1000:.2f} ms ({win.describe()})")
    print(
        f"game_of_life: first step matches NumPy: board {checked['board']}, "
        f"pixels {checked['pixels']}"
    )
    png = args.png or ("game_of_life.png" if headless else None)
    if png:
        pixels = win.save_png(png)
        alive = int((pixels[..., 0] == 255).sum())
        print(f"game_of_life: wrote {png} ({alive} live cells shown)")
    win.close()
    return 0 if all(checked.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
