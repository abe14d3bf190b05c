"""Pinned host<->device bandwidth through cuplug.driver (pagelocked arrays, memcpy_htod/dtoh)
against a raw C++ cuMemcpyHtoD/DtoH loop (raw_copy, run by this script), and PyTorch / CuPy when
importable.

Usage: python tests/benchmarks/bench_copy.py [--mib M]... [--repeats R] [--json-out FILE]
Timings are reported, not asserted. Goal: cuplug >= 0.95 x raw in both directions.
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_common import require_gpu, run_raw, time_per_call, write_json

SCRIPT = "bench_copy"
GOAL = 0.95


def cuplug_copies(driver, ctx, nbytes):
    host = driver.pagelocked_empty(nbytes, np.uint8)
    host.fill(1)
    device = driver.mem_alloc(nbytes)

    def h2d(count):
        for _ in range(count):
            driver.memcpy_htod(device, host)
        ctx.synchronize()

    def d2h(count):
        for _ in range(count):
            driver.memcpy_dtoh(host, device)
        ctx.synchronize()

    return h2d, d2h, device.free


def torch_copies(nbytes):
    import torch

    if not torch.cuda.is_available():
        return None
    host = torch.ones(nbytes, dtype=torch.uint8).pin_memory()
    device = torch.empty(nbytes, dtype=torch.uint8, device="cuda")

    def h2d(count):
        for _ in range(count):
            device.copy_(host)
        torch.cuda.synchronize()

    def d2h(count):
        for _ in range(count):
            host.copy_(device)
        torch.cuda.synchronize()

    return h2d, d2h, lambda: None


def cupy_copies(nbytes):
    import cupy

    memory = cupy.cuda.alloc_pinned_memory(nbytes)
    host = np.frombuffer(memory, np.uint8, nbytes)
    host.fill(1)
    device = cupy.empty(nbytes, dtype=cupy.uint8)

    def h2d(count):
        for _ in range(count):
            device.set(host)
        cupy.cuda.Device().synchronize()

    def d2h(count):
        for _ in range(count):
            device.get(out=host)
        cupy.cuda.Device().synchronize()

    return h2d, d2h, lambda: None


def gbps(nbytes, copy, repeats):
    best, _median = time_per_call(copy, 1, repeats)
    return nbytes / best / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, action="append", help="sizes in MiB (64, 256, 1024)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    sizes = [m << 20 for m in (args.mib or [64, 256, 1024])]

    driver, ctx = require_gpu(SCRIPT)
    raw_args = ["--repeats", str(args.repeats)]
    for n in sizes:
        raw_args += ["--bytes", str(n)]
    raw = {int(row["bytes"]): row for row in run_raw("raw_copy", *raw_args)}

    makers = {"cuplug": lambda n: cuplug_copies(driver, ctx, n)}
    for peer, maker in (("PyTorch", torch_copies), ("CuPy", cupy_copies)):
        try:
            __import__({"PyTorch": "torch", "CuPy": "cupy"}[peer])
        except ImportError:
            print(f"{SCRIPT}: {peer} not importable, not measured")
            continue
        makers[peer] = maker

    print(f"{SCRIPT}: pinned copies, best of {args.repeats}, GB/s (1e9 B/s), ratio vs raw C++")
    report = {"repeats": args.repeats, "results": []}
    for n in sizes:
        row = {
            "bytes": n,
            "raw C++": {"h2d": float(raw[n]["h2d_GBps"]), "d2h": float(raw[n]["d2h_GBps"])},
        }
        for what, maker in makers.items():
            try:
                made = maker(n)
                if made is None:
                    continue
                h2d, d2h, release = made
                row[what] = {"h2d": gbps(n, h2d, args.repeats), "d2h": gbps(n, d2h, args.repeats)}
                release()
            except Exception as e:  # noqa: BLE001 - a broken peer must not hide our numbers
                if what == "cuplug":
                    raise
                print(f"{SCRIPT}: {what} failed: {type(e).__name__}: {e}")
        for what, speeds in row.items():
            if what == "bytes":
                continue
            ratios = {d: speeds[d] / row["raw C++"][d] for d in ("h2d", "d2h")}
            speeds["ratio_vs_raw"] = ratios
            verdict = ""
            if what == "cuplug":
                met = all(r >= GOAL for r in ratios.values())
                verdict = " goal met" if met else f" goal {GOAL}x MISSED"
            print(
                f"  {n >> 20:5d} MiB {what:<8} H2D {speeds['h2d']:6.2f} ({ratios['h2d']:4.2f}x)"
                f"  D2H {speeds['d2h']:6.2f} ({ratios['d2h']:4.2f}x){verdict}"
            )
        report["results"].append(row)
    ctx.pop()
    write_json(args.json_out, report)


if __name__ == "__main__":
    main()
