"""Reductions and scans at memory bandwidth: sum, dot, a column sum (axis=0) and cumsum of
float32, each a ratio against CUB's DeviceReduce::Sum / DeviceScan::InclusiveSum run by this
script (raw_cub, built by the project), with PyTorch and CuPy measured beside cuplug when
importable; plus a small sum from Python against PyTorch and the first call of a new
ReductionKernel (cold cache) against CuPy's.

Usage: python tests/benchmarks/bench_reduction.py [--mib M] [--side S] [--repeats R]
[--json-out FILE]. Goals (reported, not asserted): see GOALS. A reduction's GB/s counts the
bytes read; a scan's the bytes read plus written. Operations the tree does not have yet are
reported as not measured, not as failures.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import numpy as np
from bench_common import (
    bandwidth_rows,
    peers,
    report_bandwidth,
    report_small_vs_torch,
    require_gpu,
    run_raw,
    synchronizer,
    time_per_call,
    verdict,
    write_json,
)

SCRIPT = "bench_reduction"
# Bandwidth rows: fraction of the CUB baseline's GB/s (sum for reductions, inclusive_sum for
# scans). small_sum_vs_torch: fraction of PyTorch's time. reduction_cold_ms: milliseconds.
GOALS = {
    "sum(x)": 0.95,
    "dot(x,y)": 0.95,
    "a.sum(axis=0)": 0.95,
    "cumsum(x)": 0.95,
    "small_sum_vs_torch": 0.6,
    "reduction_cold_ms": 50.0,
}
BASELINE = {
    "sum(x)": "sum",
    "dot(x,y)": "sum",
    "a.sum(axis=0)": "sum",
    "cumsum(x)": "inclusive_sum",
}
SMALL_N = 1000


def moved_bytes(n, side):
    return {
        "sum(x)": 4 * n,
        "dot(x,y)": 8 * n,
        "a.sum(axis=0)": 4 * side * side,
        "cumsum(x)": 8 * n,
    }


# {{{ one maker per library: {row: callable}, None for a row the library lacks


def cuplug_ops(n, side):
    from cuplug import gpuarray

    x = gpuarray.to_gpu(np.ones(n, np.float32))
    y = gpuarray.to_gpu(np.full(n, 2, np.float32))
    a = gpuarray.to_gpu(np.ones((side, side), np.float32))
    ops = {"sum(x)": lambda: gpuarray.sum(x), "dot(x,y)": lambda: gpuarray.dot(x, y)}
    try:
        gpuarray.sum(gpuarray.zeros((2, 3), np.float32), axis=0)
        ops["a.sum(axis=0)"] = lambda: gpuarray.sum(a, axis=0)
    except TypeError:
        ops["a.sum(axis=0)"] = None
    cumsum = getattr(gpuarray, "cumsum", None)
    ops["cumsum(x)"] = (lambda: cumsum(x)) if cumsum is not None else None
    return ops


def torch_ops(n, side):
    import torch

    if not torch.cuda.is_available():
        return None
    x = torch.ones(n, dtype=torch.float32, device="cuda")
    y = torch.full((n,), 2, dtype=torch.float32, device="cuda")
    a = torch.ones((side, side), dtype=torch.float32, device="cuda")
    return {
        "sum(x)": lambda: torch.sum(x),
        "dot(x,y)": lambda: torch.dot(x, y),
        "a.sum(axis=0)": lambda: torch.sum(a, dim=0),
        "cumsum(x)": lambda: torch.cumsum(x, 0),
    }


def cupy_ops(n, side):
    import cupy

    x = cupy.ones(n, dtype=cupy.float32)
    y = cupy.full(n, 2, dtype=cupy.float32)
    a = cupy.ones((side, side), dtype=cupy.float32)
    return {
        "sum(x)": lambda: cupy.sum(x),
        "dot(x,y)": lambda: cupy.dot(x, y),
        "a.sum(axis=0)": lambda: cupy.sum(a, axis=0),
        "cumsum(x)": lambda: cupy.cumsum(x),
    }


# }}}


def small_sum_timings(makers, iters, repeats):
    out = {}
    for library in makers:
        try:
            if library == "cuplug":
                from cuplug import gpuarray

                x = gpuarray.to_gpu(np.ones(SMALL_N, np.float32))

                def op(x=x, s=gpuarray.sum):
                    return s(x)

            elif library == "PyTorch":
                import torch

                x = torch.ones(SMALL_N, dtype=torch.float32, device="cuda")
                op = x.sum
            else:
                import cupy

                x = cupy.ones(SMALL_N, dtype=cupy.float32)
                op = x.sum
            sync = synchronizer(library)

            def batch(count, op=op, sync=sync):
                for _ in range(count):
                    op()
                sync()

            best, median = time_per_call(batch, iters, repeats)
        except Exception as e:  # noqa: BLE001
            if library == "cuplug":
                raise
            print(f"{SCRIPT}: {library} small sum failed: {type(e).__name__}: {e}")
            continue
        out[library] = {"best_us": best * 1e6, "median_us": median * 1e6}
    return out


def reduction_cold(repeats):
    """ms from creating a ReductionKernel nobody compiled before to its first result."""
    from cuplug import driver, gpuarray
    from cuplug.reduction import ReductionKernel

    x = gpuarray.to_gpu(np.ones(SMALL_N, np.float32))
    times = []
    for _ in range(repeats):
        tag = uuid.uuid4().hex
        t0 = time.perf_counter()
        kernel = ReductionKernel(np.float32, "0", "a+b", f"x[i] * 2 /* {tag} */", "const float *x")
        result = kernel(x)
        driver.Context.synchronize()
        times.append(time.perf_counter() - t0)
    assert float(result.get()) == 2.0 * SMALL_N
    return times


def cupy_reduction_cold(repeats):
    import cupy

    x = cupy.ones(SMALL_N, dtype=cupy.float32)
    times = []
    for _ in range(repeats):
        tag = uuid.uuid4().hex
        t0 = time.perf_counter()
        kernel = cupy.ReductionKernel(
            "float32 x", "float32 y", f"x * 2 /* {tag} */", "a + b", "y = a", "0"
        )
        kernel(x)
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="size of x and y (MiB)")
    parser.add_argument("--side", type=int, default=16384, help="a is side x side")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--small-iters", type=int, default=5000)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    n = (args.mib << 20) // 4

    _driver, ctx = require_gpu(SCRIPT)

    cub = {
        r["op"]: float(r["GBps"])
        for r in run_raw("raw_cub", "--bytes", str(n * 4), "--repeats", str(args.repeats * 2))
    }
    others = peers(SCRIPT, (("PyTorch", "torch", torch_ops), ("CuPy", "cupy", cupy_ops)))
    makers = {"cuplug": cuplug_ops, **others}
    report = {"bytes": n * 4, "cub_GBps": cub, "rows": {}, "goals": GOALS}
    print(
        f"{SCRIPT}: float32, {args.mib} MiB operands, best of {args.repeats}; raw CUB "
        f"DeviceReduce::Sum {cub['sum']:.0f} GB/s read, DeviceScan::InclusiveSum "
        f"{cub['inclusive_sum']:.0f} GB/s read+written"
    )
    rows = bandwidth_rows(SCRIPT, makers, moved_bytes(n, args.side), n, args.side, args.repeats)
    report_bandwidth(rows, lambda what: cub[BASELINE[what]], "ratio_vs_cub", "CUB", GOALS, 14)
    report["rows"] = rows

    small = small_sum_timings(makers, args.small_iters, args.repeats)
    report["small_sum"] = small
    report_small_vs_torch(small, GOALS["small_sum_vs_torch"], f"sum of {SMALL_N}")

    cold = reduction_cold(5)
    report["reduction_cold_ms"] = {"median": statistics.median(cold) * 1e3, "best": min(cold) * 1e3}
    line = (
        f"  new ReductionKernel, first call (cold)  cuplug "
        f"{report['reduction_cold_ms']['median']:7.2f} ms median  "
        + verdict(
            report["reduction_cold_ms"]["median"],
            GOALS["reduction_cold_ms"],
            higher_is_better=False,
        )
    )
    if "CuPy" in others:
        try:
            report["cupy_reduction_cold_ms"] = statistics.median(cupy_reduction_cold(2)) * 1e3
            line += f"  (CuPy {report['cupy_reduction_cold_ms']:.1f} ms)"
        except Exception as e:  # noqa: BLE001
            print(f"{SCRIPT}: CuPy ReductionKernel failed: {type(e).__name__}: {e}")
    print(line)
    ctx.pop()
    write_json(args.json_out, report)


if __name__ == "__main__":
    main()
