"""1 MiB device allocation + free: from Python through cuplug's pool (DeviceMemoryPool, and
mem_alloc with the "pool" backend selected) against CuPy's and PyTorch's caching allocators
when importable, and in C++ (raw_alloc, run by this script): cuplug's "async" plugin against
raw cuMemAllocAsync, and the "pool" plugin.

Usage: python tests/benchmarks/bench_alloc.py [--bytes N] [--iters I] [--repeats R]
       [--json-out FILE]
Timings are reported, not asserted. Goals: Python pool <= 0.8 us; C++ pool <= 0.1 us; async
plugin <= 1.2 x raw cuMemAllocAsync.
"""

from __future__ import annotations

import argparse

from bench_common import require_gpu, run_raw, time_per_call, write_json

SCRIPT = "bench_alloc"
GOAL_PYTHON_US = 0.8
GOAL_CXX_POOL_US = 0.1
GOAL_ASYNC_RATIO = 1.2


def cuplug_pool(driver, ctx, nbytes):
    pool = driver.DeviceMemoryPool()
    allocate = pool.allocate

    def batch(count):
        for _ in range(count):
            allocate(nbytes).free()
        ctx.synchronize()

    return batch


def cuplug_mem_alloc_pool(driver, ctx, nbytes):
    import cuplug

    cuplug.use(allocator="pool")
    mem_alloc = driver.mem_alloc

    def batch(count):
        for _ in range(count):
            mem_alloc(nbytes).free()
        ctx.synchronize()

    return batch


def cupy_alloc(nbytes):
    import cupy

    alloc = cupy.cuda.alloc

    def batch(count):
        for _ in range(count):
            p = alloc(nbytes)
            del p
        cupy.cuda.Device().synchronize()

    return batch


def torch_alloc(nbytes):
    import torch

    if not torch.cuda.is_available():
        return None
    empty, dtype, device = torch.empty, torch.uint8, torch.device("cuda")

    def batch(count):
        for _ in range(count):
            t = empty(nbytes, dtype=dtype, device=device)
            del t
        torch.cuda.synchronize()

    return batch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=1 << 20)
    parser.add_argument("--iters", type=int, default=100000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    n = args.bytes

    driver, ctx = require_gpu(SCRIPT)
    raw = {
        row["what"]: float(row["us"])
        for row in run_raw(
            "raw_alloc",
            "--bytes",
            str(n),
            "--iters",
            str(args.iters),
            "--repeats",
            str(args.repeats),
        )
    }

    makers = {
        "cuplug DeviceMemoryPool": lambda: cuplug_pool(driver, ctx, n),
        "cuplug mem_alloc (pool)": lambda: cuplug_mem_alloc_pool(driver, ctx, n),
    }
    for peer, module, maker in (("CuPy", "cupy", cupy_alloc), ("PyTorch", "torch", torch_alloc)):
        try:
            __import__(module)
        except ImportError:
            print(f"{SCRIPT}: {peer} not importable, not measured")
            continue
        makers[peer] = lambda maker=maker: maker(n)

    python = {}
    for what, maker in makers.items():
        try:
            batch = maker()
            if batch is None:
                continue
            best, median = time_per_call(batch, args.iters, args.repeats)
            python[what] = {"best_us": best * 1e6, "median_us": median * 1e6}
        except Exception as e:  # noqa: BLE001 - a broken peer must not hide our numbers
            if what.startswith("cuplug"):
                raise
            print(f"{SCRIPT}: {what} failed: {type(e).__name__}: {e}")

    print(f"{SCRIPT}: {n} bytes alloc+free, best of {args.repeats} x {args.iters}, us per pair")
    print("  C++ (raw_alloc):")
    for what, us in raw.items():
        ratio = (
            f" ({us / raw['raw_async']:.2f}x raw cuMemAllocAsync)" if what != "raw_async" else ""
        )
        verdict = ""
        if what == "async_plugin":
            verdict = (
                " goal met"
                if us <= GOAL_ASYNC_RATIO * raw["raw_async"]
                else f" goal {GOAL_ASYNC_RATIO}x MISSED"
            )
        if what == "pool_plugin":
            verdict = (
                " goal met" if us <= GOAL_CXX_POOL_US else f" goal {GOAL_CXX_POOL_US} us MISSED"
            )
        print(f"    {what:<24} {us:8.3f}{ratio}{verdict}")
    print("  Python:")
    for what, t in python.items():
        verdict = ""
        if what == "cuplug DeviceMemoryPool":
            verdict = (
                " goal met"
                if t["best_us"] <= GOAL_PYTHON_US
                else f" goal {GOAL_PYTHON_US} us MISSED"
            )
        peers = [p for p in ("CuPy", "PyTorch") if p in python]
        versus = "".join(
            f", {t['best_us'] / python[p]['best_us']:.2f}x {p}'s time"
            for p in peers
            if what.startswith("cuplug")
        )
        print(f"    {what:<24} {t['best_us']:8.3f} (median {t['median_us']:.3f}){versus}{verdict}")
    ctx.pop()
    write_json(
        args.json_out,
        {
            "bytes": n,
            "iters": args.iters,
            "repeats": args.repeats,
            "cxx_us": raw,
            "python_us": python,
        },
    )


if __name__ == "__main__":
    main()
