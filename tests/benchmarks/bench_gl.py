"""OpenGL interop against the host path, on a GPU with headless EGL (docs/gl.md): a 1920x1080
RGBA frame written by a kernel and shown through a mapped pixel buffer (map, kernel, unmap,
glTexSubImage2D from the PBO, draw) against the same frame copied to the host and uploaded
(kernel, copy to host, glTexSubImage2D from host memory, draw); and the latency of map + unmap of
one registered buffer.

Usage: python tests/benchmarks/bench_gl.py [--frames N] [--repeats R] [--json-out FILE]
Frames per second over N frames (each ending in glFinish, so GL's work is counted), best of R.
Goals (docs/design.md): interop >= 10 x the host path's frames per second; map + unmap <= 20 us.
Timings are reported, not asserted.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_common import require_gpu, skip, verdict, write_json

SCRIPT = "bench_gl"
W, H = 1920, 1080
KERNEL = r"""
extern "C" __global__ void plasma(uchar4 *out, int w, int h, float t) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float v = __sinf(x * 0.01f + t) + __sinf(y * 0.013f - t) + __sinf((x + y) * 0.007f + t);
  out[y * w + x] = make_uchar4(128 + 40 * v, 128 + 40 * __sinf(v + t), 200, 255);
}
"""


def best_fps(run_frames, frames, repeats):
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        run_frames(frames)
        best = max(best, frames / (time.perf_counter() - start))
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=60)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json-out")
    args = p.parse_args()
    cuda, _ctx = require_gpu(SCRIPT)
    try:
        from cuplug import gl
    except ImportError as e:
        skip(SCRIPT, str(e))
    windowed, headless, why = gl.window_support()
    if not headless:
        skip(SCRIPT, f"no headless GL (EGL) in this build: {why}")
    from cuplug import gpuarray
    from cuplug.compiler import SourceModule

    plasma = SourceModule(KERNEL).get_function("plasma")
    win = gl.Window(W, H, headless=True, pixels=True)
    print(f"{SCRIPT}: {win.describe()}")
    grid, block = ((W + 31) // 32, (H + 7) // 8), (32, 8, 1)
    canvas = win._canvas

    def interop_frames(n):
        for i in range(n):
            with win.frame() as f:
                plasma(f.pixels, np.int32(W), np.int32(H), np.float32(i), block=block, grid=grid)
            canvas.finish()

    frame_gpu = gpuarray.empty((H, W, 4), np.uint8)
    host = cuda.pagelocked_empty((H, W, 4), np.uint8)
    texture = canvas.create_texture(W, H)

    def host_frames(n):
        for i in range(n):
            plasma(frame_gpu, np.int32(W), np.int32(H), np.float32(i), block=block, grid=grid)
            frame_gpu.get(host)
            canvas.texture_from_host(texture, host, W, H)
            canvas.clear(0, 0, 0, 1)
            canvas.draw_texture(texture)
            canvas.finish()

    interop_frames(5)
    host_frames(5)
    fps_interop = best_fps(interop_frames, args.frames, args.repeats)
    fps_host = best_fps(host_frames, args.frames, args.repeats)

    buffer = gl.RegisteredBuffer(canvas.create_buffer(1 << 20))
    iters = 2000
    best_us = float("inf")
    for _ in range(args.repeats):
        start = time.perf_counter()
        for _ in range(iters):
            buffer.map().unmap()
        cuda.Context.synchronize()
        best_us = min(best_us, (time.perf_counter() - start) / iters * 1e6)
    backend = gl._registered._backend()
    raw_us = float("inf")
    for _ in range(args.repeats):  # the backend's calls alone, without the Python objects
        start = time.perf_counter()
        for _ in range(iters):
            backend.map([buffer.handle])
            backend.unmap([buffer.handle])
        raw_us = min(raw_us, (time.perf_counter() - start) / iters * 1e6)
    buffer.unregister()
    win.close()

    ratio = fps_interop / fps_host
    print(f"{SCRIPT}: 1920x1080 RGBA frame, kernel -> screen")
    print(f"  interop (mapped PBO)          {fps_interop:8.1f} fps")
    print(f"  host path (D2H + TexSubImage) {fps_host:8.1f} fps")
    print(f"  ratio interop / host          {ratio:8.2f} x  (goal >= 10: {verdict(ratio, 10)})")
    print(
        f"  map + unmap, RegisteredBuffer {best_us:8.2f} us (goal <= 20: "
        f"{verdict(best_us, 20, higher_is_better=False)})"
    )
    print(f"  map + unmap, backend calls    {raw_us:8.2f} us")
    write_json(
        args.json_out,
        {
            "interop_fps": fps_interop,
            "host_fps": fps_host,
            "ratio": ratio,
            "map_unmap_us": best_us,
            "map_unmap_backend_us": raw_us,
        },
    )


if __name__ == "__main__":
    main()
