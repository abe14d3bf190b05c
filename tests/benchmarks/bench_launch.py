"""Launch overhead of an empty kernel from Python: cuplug __call__ and prepared_call against a raw
C++ cuLaunchKernel loop (raw_launch, run by this script), and CuPy / cuda.core when importable.

Usage: python tests/benchmarks/bench_launch.py [--iters N] [--repeats R] [--json-out FILE]
Timings are reported, not asserted. Goals: prepared <= 1.10 x raw, __call__ <= 1.3 x raw.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np
from bench_common import require_gpu, run_raw, time_per_call, write_json

SCRIPT = "bench_launch"
GOALS = {"prepared_call": 1.10, "__call__": 1.30}
SOURCE = 'extern "C" __global__ void empty_kernel(float *data, int n) {}\n'


def bench_cuplug(driver, ctx, ptx_path, iters, repeats):
    module = driver.module_from_file(ptx_path)
    kernel = module.get_function("empty_kernel")
    data = driver.mem_alloc(1024)
    n = np.int32(256)
    block, grid = (32, 1, 1), (1, 1)

    def call(count):
        for _ in range(count):
            kernel(data, n, block=block, grid=grid)
        ctx.synchronize()

    prepared = module.get_function("empty_kernel")
    prepared.prepare("Pi")

    def prepared_call(count):
        for _ in range(count):
            prepared.prepared_call(grid, block, data, 256)
        ctx.synchronize()

    return {
        "__call__": time_per_call(call, iters, repeats),
        "prepared_call": time_per_call(prepared_call, iters, repeats),
    }


def bench_cupy(ptx_path, iters, repeats):
    try:
        import cupy
    except ImportError:
        return None
    kernel = cupy.RawModule(path=ptx_path).get_function("empty_kernel")
    data = cupy.empty(256, dtype=cupy.float32)
    args = (data, np.int32(256))

    def call(count):
        for _ in range(count):
            kernel((1,), (32,), args)
        cupy.cuda.Device().synchronize()

    return time_per_call(call, iters, repeats)


def bench_cuda_core(iters, repeats):
    try:
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
    except ImportError:
        try:
            from cuda.core.experimental import (
                Device,
                LaunchConfig,
                Program,
                ProgramOptions,
                launch,
            )
        except ImportError:
            return None
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    program = Program(SOURCE, code_type="c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    kernel = program.compile("cubin").get_kernel("empty_kernel")
    data = dev.allocate(1024, stream=stream)
    config = LaunchConfig(grid=1, block=32)
    n = np.int32(256)

    def call(count):
        for _ in range(count):
            launch(stream, config, kernel, data, n)
        stream.sync()

    return time_per_call(call, iters, repeats)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json-out")
    args = parser.parse_args()

    driver, ctx = require_gpu(SCRIPT)
    with tempfile.TemporaryDirectory() as tmp:
        ptx_path = os.path.join(tmp, "empty_kernel.ptx")
        raw = run_raw(
            "raw_launch",
            "--iters",
            str(args.iters),
            "--repeats",
            str(args.repeats),
            "--ptx-out",
            ptx_path,
        )[0]
        results = {"raw C++": (float(raw["us_per_launch"]) * 1e-6, float(raw["median_us"]) * 1e-6)}
        if "extra_us_per_launch" in raw:  # the packed-buffer form cuplug's launcher passes
            results["raw C++ extra"] = (
                float(raw["extra_us_per_launch"]) * 1e-6,
                float(raw["extra_median_us"]) * 1e-6,
            )
        results.update(bench_cuplug(driver, ctx, ptx_path, args.iters, args.repeats))
        for peer, measure in (
            ("CuPy RawKernel", lambda: bench_cupy(ptx_path, args.iters, args.repeats)),
            ("cuda.core", lambda: bench_cuda_core(args.iters, args.repeats)),
        ):
            try:
                timing = measure()
            except Exception as e:  # noqa: BLE001 - a broken peer must not hide our numbers
                print(f"{SCRIPT}: {peer} failed: {type(e).__name__}: {e}")
                continue
            if timing is None:
                print(f"{SCRIPT}: {peer} not importable, not measured")
            else:
                results[peer] = timing
    ctx.pop()

    raw_best = results["raw C++"][0]
    print(
        f"{SCRIPT}: empty kernel, {args.iters} launches x {args.repeats} repeats, "
        f"best (median) per launch, on {raw.get('device', '?')}"
    )
    report = {
        "device": raw.get("device"),
        "iters": args.iters,
        "repeats": args.repeats,
        "results": {},
    }
    for what, (best, median) in results.items():
        ratio = best / raw_best
        goal = GOALS.get(what)
        verdict = (
            "" if goal is None else (" goal met" if ratio <= goal else f" goal {goal}x MISSED")
        )
        print(
            f"  {what:<15} {best * 1e6:7.3f} us ({median * 1e6:7.3f})  {ratio:5.2f}x raw{verdict}"
        )
        report["results"][what] = {
            "best_us": best * 1e6,
            "median_us": median * 1e6,
            "ratio_vs_raw": ratio,
            "goal": goal,
        }
    for peer in ("CuPy RawKernel", "cuda.core"):
        if peer in results:
            print(
                f"  prepared_call vs {peer}: {results['prepared_call'][0] / results[peer][0]:.2f}x"
            )
    write_json(args.json_out, report)


if __name__ == "__main__":
    main()
