"""OpenGL interop against the host path, on a GPU with headless EGL (docs/gl.md): a 1920x1080
RGBA frame written by a kernel and shown through a mapped pixel buffer (map, kernel, unmap,
glTexSubImage2D from the PBO, draw) against the same frame copied to the host and uploaded
(kernel, copy to host, glTexSubImage2D from host memory, draw); and the latency of map + unmap of
one registered buffer.

Usage: python tests/benchmarks/bench_gl.py [--frames N] [--repeats R] [--json-out FILE]
Frames per second over N frames (each ending in glFinish, so GL's work is counted), best of R,
next to the same frames made by the raw C++ floor (raw_gl, run by this script: NVIDIA's GL and
the driver API called directly, and what each side costs alone). map + unmap is timed per pair
(median of 300), right after registering and again after the frames.
Goals (docs/design.md): interop >= 10 x the host path's frames per second; map + unmap <= 20 us.
Timings are reported, not asserted.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_common import raw_binary, require_gpu, run_raw, skip, verdict, write_json

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


def pair_median_us(mapper, pairs=300, then=None):
    """Median microseconds of one map + unmap pair done by ``mapper()``; ``then()`` (untimed)
    after each pair."""
    times = []
    for _ in range(pairs):
        start = time.perf_counter()
        mapper()
        times.append((time.perf_counter() - start) * 1e6)
        if then is not None:
            then()
    return float(np.median(times))


def raw_floor(frames, repeats):
    """raw_gl's figures (None when it was not built: no GLEW or EGL at build time)."""
    try:
        raw_binary("raw_gl")
    except SystemExit as e:
        print(f"{SCRIPT}: no raw C++ floor: {e}")
        return None
    rows = run_raw("raw_gl", "--frames", str(frames), "--repeats", str(repeats))
    frames_by_path = {r["path"]: r for r in rows if r.get("what") == "frame"}
    pairs = {
        (r["bytes"], r["flags"], r["then"]): float(r["pair_med_us"])
        for r in rows
        if r.get("what") == "map_unmap"
    }
    checks = {r["path"]: r.get("ok") == "1" for r in rows if r.get("what") == "check"}
    cuda_only = next((r for r in rows if r.get("what") == "cuda_only"), {})
    return frames_by_path, pairs, checks, cuda_only


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

    buffer = gl.RegisteredBuffer(canvas.create_buffer(1 << 20))
    canvas.finish()
    backend = gl._registered._backend()
    handle = [buffer.handle]

    def backend_pair():
        backend.map(handle)
        backend.unmap(handle)

    def object_pair():
        buffer.map().unmap()

    map_us = {
        "RegisteredBuffer": pair_median_us(object_pair),
        "backend calls": pair_median_us(backend_pair),
        # as in a frame loop: GL's queue drained (untimed) after each pair
        "RegisteredBuffer, glFinish between": pair_median_us(object_pair, then=canvas.finish),
    }
    interop_frames(5)
    host_frames(5)
    fps_interop = best_fps(interop_frames, args.frames, args.repeats)
    fps_host = best_fps(host_frames, args.frames, args.repeats)
    map_us["RegisteredBuffer, after the frames"] = pair_median_us(object_pair)
    best_us = map_us["RegisteredBuffer"]
    buffer.unregister()
    win.close()
    raw = raw_floor(args.frames * 5, args.repeats)

    ratio = fps_interop / fps_host
    print(f"{SCRIPT}: 1920x1080 RGBA frame, kernel -> screen, each frame finished")
    print(f"  interop (mapped PBO, drawn)   {fps_interop:8.1f} fps")
    print(f"  host path (D2H + TexSubImage) {fps_host:8.1f} fps")
    print(f"  ratio interop / host          {ratio:8.2f} x  (goal >= 10: {verdict(ratio, 10)})")
    print(f"{SCRIPT}: map + unmap of a registered 1 MiB buffer, median of one pair")
    for what, us in map_us.items():
        print(f"  {what:<36} {us:8.2f} us")
    print(f"  goal <= 20 us (RegisteredBuffer): {verdict(best_us, 20, higher_is_better=False)}")
    raw_json = {}
    if raw:
        frames_by_path, pairs, checks, cuda_only = raw
        print(f"{SCRIPT}: raw C++ floor (raw_gl: GL and the driver API directly)")
        for path, row in frames_by_path.items():
            print(
                f"  {path:<20} finished {float(row['finished_fps']):8.1f} fps, pipelined "
                f"{float(row['pipelined_fps']):8.1f} fps"
            )
        host_raw = float(frames_by_path["host"]["finished_fps"])
        for path in ("mapped_pbo", "mapped_buffer_draw", "shared_memory"):
            if path in frames_by_path:
                r = float(frames_by_path[path]["finished_fps"]) / host_raw
                print(f"  ratio {path} / host (finished)  {r:6.2f} x")
        # What cuplug.gl.Window does: the mapped pixel buffer drawn straight from the buffer.
        same_raw = float(frames_by_path["mapped_buffer_draw"]["finished_fps"])
        print(
            f"  cuplug: interop frames {fps_interop / same_raw:.2f} x raw mapped_buffer_draw's "
            f"fps; host path {fps_host / host_raw:.2f} x raw host's"
        )
        print(
            f"  CUDA alone: write + sync {cuda_only.get('write_sync_us')} us, map + write + "
            f"unmap + sync {cuda_only.get('map_write_unmap_sync_us')} us"
        )
        for (nbytes, flags, then), us in sorted(pairs.items()):
            print(f"  map + unmap {nbytes:>8} B {flags:<13} then {then:<8} {us:8.2f} us")
        bad = [p for p, ok in checks.items() if not ok]
        if bad:
            print(f"  WRONG pixels in the raw floor's checks: {bad}")
        raw_json = {
            "raw_frames": {p: dict(r) for p, r in frames_by_path.items()},
            "raw_map_unmap_us": {" ".join(k): v for k, v in pairs.items()},
            "raw_checks": checks,
        }
    write_json(
        args.json_out,
        {
            "interop_fps": fps_interop,
            "host_fps": fps_host,
            "ratio": ratio,
            "map_unmap_us": map_us,
            **raw_json,
        },
    )


if __name__ == "__main__":
    main()
