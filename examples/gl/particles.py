#!/usr/bin/env python3
"""A particle system: 100,000 points orbiting a centre, positions and colours updated by a kernel
each frame straight in GL's vertex and colour buffers. Windowed, or --headless saving a PNG."""
# example-test: without-gpu

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

KERNEL = r"""
extern "C" __global__ void advance(float2 *pos, float2 *vel, uchar4 *colour, int n, float dt) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float2 p = pos[i], v = vel[i];
  float r2 = p.x * p.x + p.y * p.y + 0.01f;
  float a = -0.05f / (r2 * sqrtf(r2));  // pulled to the centre
  v.x += a * p.x * dt;
  v.y += a * p.y * dt;
  p.x += v.x * dt;
  p.y += v.y * dt;
  pos[i] = p;
  vel[i] = v;
  float speed = fminf(sqrtf(v.x * v.x + v.y * v.y) * 2.0f, 1.0f);
  colour[i] = make_uchar4(255 * speed, 80, 255 * (1.0f - speed), 255);
}
"""
COUNT = 100_000


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
        "--png", help="save the last frame (headless: default particles.png; windowed: when given)"
    )
    args = p.parse_args(argv)
    reason = gpu_or_reason()
    if reason:
        print(f"particles needs an NVIDIA GPU with OpenGL interop: {reason}")
        return 0
    from cuplug import gpuarray
    from cuplug.compiler import SourceModule
    from cuplug.gl import Window

    headless = args.headless or not os.environ.get("DISPLAY")
    frames = args.frames or (30 if headless else None)
    rng = np.random.default_rng(3)
    radius, angle = rng.uniform(0.2, 0.9, COUNT), rng.uniform(0, 2 * np.pi, COUNT)
    start = np.stack([radius * np.cos(angle), radius * np.sin(angle)], 1).astype(np.float32)
    speed = np.sqrt(0.05 / radius) * 0.9
    velocity = np.stack([-speed * np.sin(angle), speed * np.cos(angle)], 1).astype(np.float32)
    win = Window(
        640,
        640,
        "particles (cuplug)",
        headless=headless,
        vertices=COUNT,
        vertex_components=2,
        colors=True,
        point_size=1.0,
    )
    vel = gpuarray.to_gpu(velocity)  # after the window: it makes the context current
    advance = SourceModule(KERNEL).get_function("advance")
    with win.frame() as f:  # the start positions, copied into GL's buffer once
        f.vertices.set(start)

    def step(frame):
        advance(
            frame.vertices,
            vel,
            frame.colors,
            np.int32(COUNT),
            np.float32(0.01),
            block=(256, 1, 1),
            grid=((COUNT + 255) // 256, 1),
            stream=frame.stream,
        )

    drawn = win.run(step, frames=frames, report_every=1.0)
    print(
        f"particles: {drawn} frames of {COUNT} points, last {win.frame_time * 1000:.2f} ms "
        f"({win.describe()})"
    )
    png = args.png or ("particles.png" if headless else None)
    if png:
        pixels = win.save_png(png)
        lit = int((pixels[..., :3].max(axis=2) > 60).sum())
        print(f"particles: wrote {png} ({lit} lit pixels)")
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
