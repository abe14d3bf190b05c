"""Array operations at memory bandwidth: GPUArray arithmetic, cumath, broadcasting, strided views,
small-op overhead and kernel-creation latency, each a ratio against a raw C++ device-to-device
copy (raw_d2d, run by this script) or against PyTorch in the same run; CuPy and PyTorch are
measured beside cuplug when importable.

Usage: python tests/benchmarks/bench_array.py [--mib M] [--repeats R] [--json-out FILE]
Goals (reported, not asserted): see GOALS. Bandwidth counts bytes read plus bytes written.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
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

SCRIPT = "bench_array"
# Bandwidth rows: fraction of the raw copy's GB/s. small_op: fraction of PyTorch's time.
# elementwise_cold_ms / fresh_process_ms: milliseconds.
GOALS = {
    "x*2": 0.95,
    "x+y": 0.95,
    "sin(x)": 0.95,
    "a+row": 0.90,
    "x[::2]*2": 0.80,
    "fuse:gauss": 0.90,
    "small_op_vs_torch": 0.60,
    "elementwise_cold_ms": 20.0,
    "fresh_process_ms": 2.0,
}
BROADCAST_SIDE = 16384  # a + row on a 16k x 16k float32 matrix (1 GiB)
SMALL_N = 1000


# {{{ the bandwidth rows, one maker per library


def cuplug_ops(n, side):
    import cuplug
    from cuplug import cumath, gpuarray

    gauss = cuplug.fuse(lambda x, a, b: cumath.exp(-x * x / 2) * a + b)

    x = gpuarray.to_gpu(np.ones(n, np.float32))
    y = gpuarray.to_gpu(np.full(n, 2, np.float32))
    a = gpuarray.to_gpu(np.ones((side, side), np.float32))
    row = gpuarray.to_gpu(np.arange(side, dtype=np.float32))
    strided = x[::2]
    return {
        "x*2": lambda: x * 2,
        "x+y": lambda: x + y,
        "sin(x)": lambda: cumath.sin(x),
        "a+row": lambda: a + row,
        "x[::2]*2": lambda: strided * 2,
        "fuse:gauss": lambda: gauss(x, 2.0, 1.0),
    }


def torch_ops(n, side):
    import torch

    if not torch.cuda.is_available():
        return None
    x = torch.ones(n, dtype=torch.float32, device="cuda")
    y = torch.full((n,), 2, dtype=torch.float32, device="cuda")
    a = torch.ones((side, side), dtype=torch.float32, device="cuda")
    row = torch.arange(side, dtype=torch.float32, device="cuda")
    strided = x[::2]
    return {
        "x*2": lambda: x * 2,
        "x+y": lambda: x + y,
        "sin(x)": lambda: torch.sin(x),
        "a+row": lambda: a + row,
        "x[::2]*2": lambda: strided * 2,
        "fuse:gauss": None,  # torch has no fuser
    }


def cupy_ops(n, side):
    import cupy

    # A def, not a lambda: CuPy names the kernel after the function ("<lambda>" does not compile).
    def gauss_fn(x, a, b):
        return cupy.exp(-x * x / 2) * a + b

    gauss = cupy.fuse(gauss_fn)
    x = cupy.ones(n, dtype=cupy.float32)
    y = cupy.full(n, 2, dtype=cupy.float32)
    a = cupy.ones((side, side), dtype=cupy.float32)
    row = cupy.arange(side, dtype=cupy.float32)
    strided = x[::2]
    return {
        "x*2": lambda: x * 2,
        "x+y": lambda: x + y,
        "sin(x)": lambda: cupy.sin(x),
        "a+row": lambda: a + row,
        "x[::2]*2": lambda: strided * 2,
        "fuse:gauss": lambda: gauss(x, 2.0, 1.0),
    }


def moved_bytes(n, side):
    """Bytes each row reads plus writes. x[::2] reads every other float, which touches every
    32-byte sector of x: the whole of x is read, half of it is written."""
    return {
        "x*2": 2 * 4 * n,
        "x+y": 3 * 4 * n,
        "sin(x)": 2 * 4 * n,
        "a+row": 2 * 4 * side * side + 4 * side,
        "x[::2]*2": 4 * n + 4 * (n // 2),
        "fuse:gauss": 2 * 4 * n,  # exp(-x*x/2)*a+b, scalar a and b: read x, write the result
    }


def small_op_timings(makers, iters, repeats):
    out = {}
    for library in makers:
        try:
            if library == "cuplug":
                from cuplug import gpuarray

                x = gpuarray.to_gpu(np.ones(SMALL_N, np.float32))
            elif library == "PyTorch":
                import torch

                x = torch.ones(SMALL_N, dtype=torch.float32, device="cuda")
            else:
                import cupy

                x = cupy.ones(SMALL_N, dtype=cupy.float32)
            sync = synchronizer(library)

            def batch(count, x=x, sync=sync):
                for _ in range(count):
                    x * 2
                sync()

            best, median = time_per_call(batch, iters, repeats)
        except Exception as e:  # noqa: BLE001
            if library == "cuplug":
                raise
            print(f"{SCRIPT}: {library} small op failed: {type(e).__name__}: {e}")
            continue
        out[library] = {"best_us": best * 1e6, "median_us": median * 1e6}
    return out


# }}}

# {{{ kernel creation: a new ElementwiseKernel, and the first x * 2 of a fresh process


def elementwise_cold(repeats):
    """ms from creating an ElementwiseKernel nobody compiled before to its first result."""
    from cuplug import driver, gpuarray
    from cuplug.elementwise import ElementwiseKernel

    x = gpuarray.to_gpu(np.ones(SMALL_N, np.float32))
    y = gpuarray.empty_like(x)
    times = []
    for _ in range(repeats):
        tag = uuid.uuid4().hex
        t0 = time.perf_counter()
        kernel = ElementwiseKernel("float *y, const float *x", f"y[i] = x[i] * 2 /* {tag} */")
        kernel(y, x)
        driver.Context.synchronize()
        times.append(time.perf_counter() - t0)
    assert float(y.get()[0]) == 2.0
    return times


def cupy_elementwise_cold(repeats):
    import cupy

    x = cupy.ones(SMALL_N, dtype=cupy.float32)
    times = []
    for _ in range(repeats):
        tag = uuid.uuid4().hex
        t0 = time.perf_counter()
        kernel = cupy.ElementwiseKernel("float32 x", "float32 y", f"y = x * 2 /* {tag} */")
        kernel(x)
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return times


FRESH_PROCESS = textwrap.dedent(
    """
    import time
    import numpy as np
    import cuplug.autoinit
    from cuplug import driver, gpuarray
    x = gpuarray.to_gpu(np.ones(1000, np.float32))
    driver.Context.synchronize()
    t0 = time.perf_counter()
    y = x * 2
    driver.Context.synchronize()
    t1 = time.perf_counter()
    assert float(y.get()[0]) == 2.0
    print(f"first_op_ms={(t1 - t0) * 1e3:.4f}")
    """
)


def fresh_process(repeats):
    """ms of the first x * 2 in new processes sharing a disk cache one earlier run filled."""
    times = []
    with tempfile.TemporaryDirectory(prefix="cuplug-bench-cache-") as cache:
        env = dict(os.environ, CUPLUG_CACHE_DIR=cache)
        for run in range(repeats + 1):
            proc = subprocess.run(
                [sys.executable, "-c", FRESH_PROCESS],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"fresh process failed: {proc.stderr.strip()[-800:]}")
            ms = float(proc.stdout.strip().rsplit("first_op_ms=", 1)[1])
            if run > 0:  # run 0 fills the disk cache
                times.append(ms / 1e3)
    return times


# }}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="size of x and y (MiB)")
    parser.add_argument("--side", type=int, default=BROADCAST_SIDE, help="a is side x side")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--small-iters", type=int, default=5000)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    n = (args.mib << 20) // 4

    _driver, ctx = require_gpu(SCRIPT)  # the array layer works in the context pushed here

    raw = run_raw("raw_d2d", "--bytes", str(n * 4), "--repeats", str(args.repeats * 2))[0]
    copy_gbps = float(raw["GBps"])
    others = peers(SCRIPT, (("PyTorch", "torch", torch_ops), ("CuPy", "cupy", cupy_ops)))
    makers = {"cuplug": cuplug_ops, **others}

    report = {"bytes": n * 4, "copy_GBps": copy_gbps, "rows": {}, "goals": GOALS}
    print(
        f"{SCRIPT}: float32, {args.mib} MiB operands, best of {args.repeats}; GB/s counts "
        f"bytes read + written; raw cuMemcpyDtoD {copy_gbps:.0f} GB/s"
    )
    rows = bandwidth_rows(SCRIPT, makers, moved_bytes(n, args.side), n, args.side, args.repeats)
    report_bandwidth(rows, lambda what: copy_gbps, "ratio_vs_copy", "copy", GOALS, 9)
    report["rows"] = rows

    small = small_op_timings(makers, args.small_iters, args.repeats)
    report["small_op"] = small
    report_small_vs_torch(small, GOALS["small_op_vs_torch"], f"x*2 on {SMALL_N}")

    cold = elementwise_cold(5)
    report["elementwise_cold_ms"] = {
        "median": statistics.median(cold) * 1e3,
        "best": min(cold) * 1e3,
    }
    line = (
        f"  new ElementwiseKernel, first call (cold)  cuplug "
        f"{report['elementwise_cold_ms']['median']:7.2f} ms median  "
        + verdict(
            report["elementwise_cold_ms"]["median"],
            GOALS["elementwise_cold_ms"],
            higher_is_better=False,
        )
    )
    if "CuPy" in others:
        try:
            cupy_cold = cupy_elementwise_cold(3)
            report["cupy_elementwise_cold_ms"] = statistics.median(cupy_cold) * 1e3
            line += f"  (CuPy {report['cupy_elementwise_cold_ms']:.1f} ms)"
        except Exception as e:  # noqa: BLE001
            print(f"{SCRIPT}: CuPy ElementwiseKernel failed: {type(e).__name__}: {e}")
    print(line)

    fresh = fresh_process(3)
    report["fresh_process_ms"] = {
        "median": statistics.median(fresh) * 1e3,
        "best": min(fresh) * 1e3,
    }
    print(
        f"  first x*2 in a fresh process (warm disk cache)  "
        f"{report['fresh_process_ms']['median']:7.3f} ms median  "
        + verdict(
            report["fresh_process_ms"]["median"], GOALS["fresh_process_ms"], higher_is_better=False
        )
    )
    ctx.pop()
    write_json(args.json_out, report)


if __name__ == "__main__":
    main()
