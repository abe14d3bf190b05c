"""A chain of 1000 small kernels: replayed as one CUDA graph (captured from cuplug launches)
against the same kernels launched one by one from Python (prepared_async_call, __call__) and
from a raw C++ cuLaunchKernel loop, and the raw C++ graph replay (raw_graph, run by this script).

Usage: python tests/benchmarks/bench_graph.py [--kernels K] [--repeats R] [--json-out FILE]
Timings are reported, not asserted. Goals: the cuplug graph replay within 1.05 x the raw graph
replay, and faster than the raw C++ launch loop (the point of graphs is to beat launch overhead).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
from bench_common import require_gpu, run_raw, write_json

SCRIPT = "bench_graph"


def timed(run, repeats):
    """(best, median) seconds of run() over `repeats` runs after one warm-up."""
    run()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        samples.append(time.perf_counter() - t0)
    return min(samples), statistics.median(samples)


def bench_cuplug(driver, ptx_path, kernels, repeats):
    module = driver.module_from_file(ptx_path)
    bump = module.get_function("bump")
    bump.prepare("Pi")
    data = driver.mem_alloc(256 * 4)
    stream = driver.Stream(flags=1)
    n, block, grid = np.int32(256), (256, 1, 1), (1, 1)

    def prepared_loop():
        for _ in range(kernels):
            bump.prepared_async_call(grid, block, stream, data, 256)
        stream.synchronize()

    def call_loop():
        for _ in range(kernels):
            bump(data, n, block=block, grid=grid, stream=stream)
        stream.synchronize()

    stream.begin_capture()
    for _ in range(kernels):
        bump.prepared_async_call(grid, block, stream, data, 256)
    graph = stream.end_capture()
    exec_ = graph.instantiate()
    exec_.upload(stream)

    def replay():
        exec_.launch(stream)
        stream.synchronize()

    return {
        "graph replay": timed(replay, repeats),
        "prepared loop": timed(prepared_loop, repeats),
        "__call__ loop": timed(call_loop, repeats),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json-out")
    args = parser.parse_args()

    driver, ctx = require_gpu(SCRIPT)
    with tempfile.TemporaryDirectory() as tmp:
        ptx_path = os.path.join(tmp, "bump.ptx")
        raw = run_raw(
            "raw_graph",
            "--kernels",
            str(args.kernels),
            "--repeats",
            str(args.repeats),
            "--ptx-out",
            ptx_path,
        )[0]
        results = {
            "raw C++ loop": (float(raw["loop_us"]) * 1e-6, float(raw["loop_median_us"]) * 1e-6),
            "raw C++ graph": (float(raw["graph_us"]) * 1e-6, float(raw["graph_median_us"]) * 1e-6),
        }
        results.update(bench_cuplug(driver, ptx_path, args.kernels, args.repeats))
    ctx.pop()

    loop, raw_graph = results["raw C++ loop"][0], results["raw C++ graph"][0]
    print(
        f"{SCRIPT}: {args.kernels} small kernels per chain, {args.repeats} repeats, best "
        f"(median) per chain, on {raw.get('device', '?')}"
    )
    report = {"device": raw.get("device"), "kernels": args.kernels, "results": {}}
    for what, (best, median) in results.items():
        print(
            f"  {what:<15} {best * 1e6:9.1f} us ({median * 1e6:9.1f})  "
            f"{best / loop:5.2f}x raw loop  {best / raw_graph:5.2f}x raw graph"
        )
        report["results"][what] = {
            "best_us": best * 1e6,
            "median_us": median * 1e6,
            "ratio_vs_raw_loop": best / loop,
            "ratio_vs_raw_graph": best / raw_graph,
        }
    ours = results["graph replay"][0]
    goals = {
        "graph replay <= 1.05 x raw C++ graph": ours <= 1.05 * raw_graph,
        "graph replay < raw C++ launch loop": ours < loop,
    }
    for goal, met in goals.items():
        print(f"  {goal}: {'met' if met else 'MISSED'}")
    report["goals"] = goals
    write_json(args.json_out, report)


if __name__ == "__main__":
    main()
