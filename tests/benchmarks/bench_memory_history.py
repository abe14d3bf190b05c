"""What cuplug.memory.record_history() costs per allocation + free: mem_alloc(256).free() and a
GPUArray made and dropped, with the history never started, recording one frame, and recording
eight. Runs on a real GPU or on the fake driver (CUPLUG_CUDA_DRIVER=.../libcuplug_fake_cuda.so:
then it times cuplug's own code, the driver's calls being nearly free), with the "pool" backend so
that the driver's cuMemAlloc does not dominate.

Usage: python tests/benchmarks/bench_memory_history.py [--iters N] [--repeats R]
Timings are reported (median of the repeats, microseconds per allocation + free), not asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time


def per_call_us(fn, iters: int, repeats: int) -> float:
    fn(min(iters, 1000))  # warm up: the pool has its block, the code its caches
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(iters)
        runs.append((time.perf_counter() - start) / iters * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import numpy as np

    import cuplug
    import cuplug.autoinit  # noqa: F401
    import cuplug.driver as drv
    import cuplug.gpuarray as gpuarray
    import cuplug.memory as memory

    cuplug.use(allocator="pool")

    def mem_alloc(count):
        for _ in range(count):
            drv.mem_alloc(256).free()

    def array(count):
        for _ in range(count):
            gpuarray.empty(64, np.float32)

    print(
        f"{'':<22}{'mem_alloc+free':>16}{'GPUArray':>12}   (us per call, median of "
        f"{args.repeats} x {args.iters})"
    )
    # A build from before record_history() (for the baseline) times the first line only.
    has_history = hasattr(memory, "record_history")
    cases = [("off", None), ("on, frames=1", 1), ("on, frames=8", 8)]
    for label, frames in cases if has_history else [("no history (old build)", None)]:
        if frames is not None:
            memory.record_history(True, frames=frames, max_events=100_000)
        try:
            a = per_call_us(mem_alloc, args.iters, args.repeats)
            g = per_call_us(array, args.iters // 2, args.repeats)
        finally:
            if has_history:
                memory.record_history(False)
        print(f"{label:<22}{a:>16.3f}{g:>12.3f}")


if __name__ == "__main__":
    main()
