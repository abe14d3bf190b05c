"""Shared pieces of the benchmark scripts: finding a GPU, the raw C++ baselines, timing, output."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time


def skip(script: str, reason: str) -> None:
    """Ends the benchmark with a clear message, exit status 0: no GPU is not a failure."""
    print(f"{script}: skipped: {reason}")
    sys.exit(0)


def require_gpu(script: str):
    """Returns cuplug.driver with a context on device 0 pushed, or ends the script (skipped)."""
    try:
        from cuplug import _core
    except ImportError as e:
        skip(script, f"cannot import cuplug ({e}); build it and set PYTHONPATH=<build>/python")
    if not _core.backends.driver_available():
        skip(script, f"no CUDA driver: {_core.backends.driver_library_description()}")
    if "fake" in os.environ.get("CUPLUG_CUDA_DRIVER", ""):
        skip(script, "CUPLUG_CUDA_DRIVER names the fake driver; timings need a real GPU")
    from cuplug import driver

    driver.init()
    if driver.Device.count() == 0:
        skip(script, "the driver reports no CUDA device")
    ctx = driver.Device(0).retain_primary_context()
    ctx.push()
    return driver, ctx


def raw_binary(name: str) -> str:
    """Path of a raw baseline built by the project: <CUPLUG_BUILD_DIR or build>/tests/benchmarks."""
    build = os.environ.get("CUPLUG_BUILD_DIR", "build")
    path = os.path.join(build, "tests", "benchmarks", name)
    if not os.access(path, os.X_OK):
        raise SystemExit(
            f"{name} not found at {path}: build it (ninja -C {build} {name}) or set "
            "CUPLUG_BUILD_DIR to the build folder"
        )
    return path


def run_raw(name: str, *args: str) -> list[dict[str, str]]:
    """Runs a raw baseline; returns the key=value fields of each "<name>: ..." line it prints."""
    proc = subprocess.run(
        [raw_binary(name), *args], capture_output=True, text=True, timeout=300, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed (exit {proc.returncode}): {proc.stderr.strip()}")
    rows = []
    for line in proc.stdout.splitlines():
        if line.startswith(f"{name}:"):
            rows.append(dict(re.findall(r"(\w+)=(\S+)", line)))
    if not rows:
        raise SystemExit(f"{name} printed no result: {proc.stdout!r}")
    return rows


def time_per_call(batch, iters: int, repeats: int) -> tuple[float, float]:
    """(best, median) seconds per call of batch(iters), which runs iters calls and waits for
    the GPU; timed exactly as the raw baselines time themselves."""
    batch(min(iters, 2000))  # warm-up
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        batch(iters)
        samples.append((time.perf_counter() - t0) / iters)
    return min(samples), statistics.median(samples)


def write_json(path: str | None, data: dict) -> None:
    if path:
        with open(path, "w") as f:
            json.dump(data, f, indent=2)


# {{{ the peer-comparison pieces of bench_array.py and bench_reduction.py


def synchronizer(library):
    """The call that waits for `library`'s queued GPU work (cuplug, PyTorch or CuPy)."""
    if library == "PyTorch":
        import torch

        return torch.cuda.synchronize
    if library == "CuPy":
        import cupy

        return cupy.cuda.Device().synchronize
    from cuplug import driver

    return driver.Context.synchronize


def peers(script, makers):
    """{library: maker} for PyTorch / CuPy given as (library, module, maker), those importable."""
    found = {}
    for library, module, maker in makers:
        try:
            __import__(module)
        except ImportError:
            print(f"{script}: {library} not importable, not measured")
            continue
        found[library] = maker
    return found


def bandwidth_rows(script, makers, moved, n, side, repeats):
    """{row: {library: timing}} for every operation each library's maker(n, side) returns
    ({row: callable}; None for a row it lacks, None for a library without a GPU), timed in
    batches of 5 calls ending in the library's synchronisation. GB/s from moved[row] bytes. A
    peer that fails is reported and left out; cuplug failing raises."""
    rows = {}
    for library, make in makers.items():
        try:
            ops = make(n, side)
        except Exception as e:  # noqa: BLE001 - a broken peer must not hide our numbers
            if library == "cuplug":
                raise
            print(f"{script}: {library} failed to set up: {type(e).__name__}: {e}")
            continue
        if ops is None:
            continue
        sync = synchronizer(library)
        for what, op in ops.items():
            if op is None:
                print(f"{script}: {library} has no {what} yet, not measured")
                continue

            def batch(count, op=op, sync=sync):
                for _ in range(count):
                    op()
                sync()

            try:
                best, median = time_per_call(batch, 5, repeats)
            except Exception as e:  # noqa: BLE001
                if library == "cuplug":
                    raise
                print(f"{script}: {library} {what} failed: {type(e).__name__}: {e}")
                continue
            rows.setdefault(what, {})[library] = {
                "best_us": best * 1e6,
                "median_us": median * 1e6,
                "GBps": moved[what] / best / 1e9,
            }
        del ops
    return rows


def verdict(value, goal, higher_is_better=True):
    met = value >= goal if higher_is_better else value <= goal
    return "goal met" if met else f"goal {goal} MISSED"


def report_bandwidth(rows, base_of, key, unit, goals, width):
    """Adds r[key] = GB/s / base_of(row) to every library's result of every row and prints
    them (cuplug's with its goal's verdict); `unit` names the baseline ("copy", "CUB")."""
    for what, by_library in rows.items():
        base = base_of(what)
        for library, r in by_library.items():
            r[key] = r["GBps"] / base
            tail = "  " + verdict(r[key], goals[what]) if library == "cuplug" else ""
            print(
                f"  {what:<{width}} {library:<8} {r['GBps']:8.0f} GB/s {r[key]:5.2f}x {unit}"
                f"  ({r['best_us']:9.1f} us){tail}"
            )


def report_small_vs_torch(small, goal, label):
    """Adds cuplug's ratio_vs_torch (its best time over PyTorch's) to `small` ({library:
    {best_us, median_us}}) and prints every library's row, `label` first ("x*2 on 1000")."""
    torch_us = small.get("PyTorch", {}).get("best_us")
    for library, r in small.items():
        tail = ""
        if library == "cuplug" and torch_us:
            r["ratio_vs_torch"] = r["best_us"] / torch_us
            tail = f"  {r['ratio_vs_torch']:.2f}x PyTorch, " + verdict(
                r["ratio_vs_torch"], goal, higher_is_better=False
            )
        times = f"{r['best_us']:7.2f} us ({r['median_us']:.2f})"
        print(f"  {label} from Python {library:<8} {times}{tail}")


# }}}
