"""Several GPUs from one Python thread: peer copy bandwidth of GPUArray.copy_to's engine
(cuplug.driver.memcpy_peer_async, peer access enabled once) against a raw C++ cuMemcpyPeerAsync
loop (raw_peer, run by this script), and one kernel run on every GPU at once against the same
kernel on one GPU alone (scaling = N x one GPU's time / all GPUs' time).

Usage: python tests/benchmarks/bench_multigpu.py [--mib M]... [--repeats R] [--json-out FILE]
Timings are reported, not asserted. Goals: peer copy >= 0.95 x raw; scaling >= 0.9 x N.
Needs two GPUs or more; with fewer it says so and exits 0 (skipped).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_common import require_gpu, run_raw, skip, write_json

SCRIPT = "bench_multigpu"
COPY_GOAL = 0.95
SCALING_GOAL = 0.9
COPIES_PER_SAMPLE = 10  # as raw_peer times itself


def peer_copy_gbps(driver, contexts, nbytes, repeats):
    """Best GB/s of copies from device 0 to device 1, timed as raw_peer times its own."""
    src_ctx, dst_ctx = contexts[0], contexts[1]
    with dst_ctx:
        dst = driver.mem_alloc(nbytes)
    with src_ctx:
        src = driver.mem_alloc(nbytes)
        driver.memset_d8(src, 1, nbytes)
        driver.memcpy_peer_async(dst, src, nbytes, dst_ctx, src_ctx)  # warm-up, enables access
        src_ctx.synchronize()
        best = 0.0
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(COPIES_PER_SAMPLE):
                driver.memcpy_peer_async(dst, src, nbytes, dst_ctx, src_ctx)
            src_ctx.synchronize()
            best = max(best, COPIES_PER_SAMPLE * nbytes / (time.perf_counter() - t0) / 1e9)
    src.free()
    dst.free()
    return best


def scaling(driver, contexts, n_elements, launches, repeats):
    """(seconds on device 0 alone, seconds on all devices at once) for `launches` launches of
    y = x * 2 + 1 per device, issued from this thread round-robin over the devices."""
    from cuplug import gpuarray
    from cuplug.elementwise import ElementwiseKernel

    kernel = ElementwiseKernel("float *y, const float *x", "y[i] = x[i] * 2.0f + 1.0f", "axpb")
    arrays = []
    for ctx in contexts:
        with ctx:
            x = gpuarray.to_gpu(np.ones(n_elements, np.float32))
            arrays.append((ctx, x, gpuarray.empty_like(x)))

    def run(subset):
        for _ in range(launches):
            for ctx, x, y in subset:
                with ctx:
                    kernel(y, x)
        for ctx, _, _ in subset:
            with ctx:  # Context.synchronize() waits for the current context
                ctx.synchronize()

    def best(subset):
        run(subset)  # warm-up: compiles and loads the kernel in each context
        samples = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            run(subset)
            samples.append(time.perf_counter() - t0)
        return min(samples)

    return best(arrays[:1]), best(arrays)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, action="append", help="copy sizes in MiB (64, 256)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    sizes = [m << 20 for m in (args.mib or [64, 256])]

    driver, ctx = require_gpu(SCRIPT)
    count = driver.Device.count()
    if count < 2:
        ctx.pop()
        skip(SCRIPT, f"needs two GPUs or more; this machine has {count}")
    ctx.pop()
    contexts = [driver.Device(i).retain_primary_context() for i in range(count)]
    can = driver.Device(0).can_access_peer(driver.Device(1))

    raw_args = ["--repeats", str(args.repeats)]
    for n in sizes:
        raw_args += ["--bytes", str(n)]
    rows = run_raw("raw_peer", *raw_args)
    raw_peer_access = next((r["peer_access"] for r in rows if "peer_access" in r), "?")
    raw = {int(r["bytes"]): float(r["GBps"]) for r in rows if "bytes" in r}

    report = {"devices": count, "can_access_peer": can, "repeats": args.repeats, "copies": []}
    print(
        f"{SCRIPT}: {count} GPUs, can_access_peer(0, 1)={can} (raw_peer peer_access="
        f"{raw_peer_access}); peer copy 0 -> 1, best of {args.repeats}, GB/s, ratio vs raw C++"
    )
    for n in sizes:
        mine = peer_copy_gbps(driver, contexts, n, args.repeats)
        ratio = mine / raw[n]
        met = "goal met" if ratio >= COPY_GOAL else f"goal {COPY_GOAL}x MISSED"
        print(f"  {n >> 20:5d} MiB raw C++ {raw[n]:7.1f}  cuplug {mine:7.1f} ({ratio:4.2f}x) {met}")
        report["copies"].append({"bytes": n, "raw": raw[n], "cuplug": mine, "ratio": ratio})

    n_elements, launches = 64 << 20, 20
    one, every = scaling(driver, contexts, n_elements, launches, max(3, args.repeats // 2))
    factor = count * one / every
    met = "goal met" if factor >= SCALING_GOAL * count else f"goal {SCALING_GOAL} x N MISSED"
    print(
        f"{SCRIPT}: y = x * 2 + 1 over {n_elements >> 20} Mi float32, {launches} launches per "
        f"GPU: one GPU {one * 1e3:.2f} ms, all {count} at once {every * 1e3:.2f} ms, scaling "
        f"{factor:.2f} of {count} ({factor / count:.2f} x N) {met}"
    )
    report["scaling"] = {"one_s": one, "all_s": every, "factor": factor, "devices": count}
    write_json(args.json_out, report)


if __name__ == "__main__":
    main()
