"""Random number generation through the rng plugins against cuRAND's host API called from C++
(raw_rng, run by this script), and PyTorch / CuPy when importable; and the construction time of
the PyCUDA-style curandom generator classes with a warm compile cache.

Usage: python tests/benchmarks/bench_rng.py [--mib M]... [--repeats R] [--json-out FILE]
GB/s counts the bytes written (1e9 B/s), timed with events around one generate call, best of R.
Goals (docs/benchmarks.md): philox uniform float32 >= 1.0 x raw cuRAND Philox, philox normal
float32 >= 1.3 x raw cuRAND Philox normal, the curand plugin >= 0.97 x raw cuRAND for every
generator, a curandom generator class made in <= 5 ms once its kernels are cached. Timings are
reported, not asserted.
"""

from __future__ import annotations

import argparse
import time

from bench_common import require_gpu, run_raw, write_json

SCRIPT = "bench_rng"
GENERATORS = (
    "philox",
    "xorwow",
    "mrg32k3a",
    "mtgp32",
    "mt19937",
    "sobol32",
    "scrambled_sobol32",
    "sobol64",
    "scrambled_sobol64",
)
KINDS = {  # kind: (distribution, dtype, bytes per value)
    "uniform_f32": ("uniform", "float32", 4),
    "normal_f32": ("normal", "float32", 4),
    "uniform_f64": ("uniform", "float64", 8),
}
# (backend, generator, kind) -> the minimum ratio against raw cuRAND of the same generator.
GOALS = {("philox", "philox", "uniform_f32"): 1.0, ("philox", "philox", "normal_f32"): 1.3}
CURAND_GOAL = 0.97
CONSTRUCTION_GOAL_MS = 5.0


def event_gbps(driver, nbytes, call, repeats):
    """Best GB/s of `call()` (one fill of nbytes), timed with events on the default stream."""
    start, stop = driver.Event(), driver.Event()
    call()  # warm-up: the first call sets up states and loads kernels
    driver.Context.synchronize()
    best = 0.0
    for _ in range(repeats):
        start.record()
        call()
        stop.record()
        stop.synchronize()
        best = max(best, nbytes / (stop.time_since(start) * 1e-3) / 1e9)
    return best


def cuplug_fill(backend, generator, kind, out, nbytes):
    from cuplug import _core

    options = {"generator": generator} if backend == "curand" else {}
    g = _core.rng.create(backend, options)
    distribution, dtype, size = KINDS[kind]
    count = nbytes // size // 2 * 2
    address = int(out)
    return lambda: g.generate(distribution, dtype, address, count)


def torch_fill(kind, nbytes):
    import torch

    if not torch.cuda.is_available():
        return None
    distribution, dtype, size = KINDS[kind]
    t = torch.empty(nbytes // size, dtype=getattr(torch, dtype), device="cuda")
    return t.uniform_ if distribution == "uniform" else t.normal_


def cupy_fill(kind, nbytes, generator):
    import cupy

    distribution, dtype, size = KINDS[kind]
    g = cupy.random.RandomState(seed=1, method=cupy.cuda.curand.CURAND_RNG_PSEUDO_XORWOW)
    if generator == "philox":
        g = cupy.random.RandomState(seed=1, method=cupy.cuda.curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
    n = nbytes // size
    if distribution == "uniform":
        return lambda: g.random_sample(n, dtype=dtype)
    return lambda: g.standard_normal(n, dtype=dtype)


def construction_ms(repeats):
    """Best milliseconds to make each curandom class once its module is in the compile cache."""
    from cuplug import curandom

    times = {}
    for cls in (
        curandom.XORWOWRandomNumberGenerator,
        curandom.MRG32k3aRandomNumberGenerator,
        curandom.Sobol32RandomNumberGenerator,
        curandom.PhiloxRandomNumberGenerator,
    ):
        cls()  # compiles (or loads) the module: the cache is warm after this
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            cls()
            best = min(best, (time.perf_counter() - t0) * 1e3)
        times[cls.__name__] = best
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, action="append", help="sizes in MiB (1024)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    sizes = [m << 20 for m in (args.mib or [1024])]

    driver, ctx = require_gpu(SCRIPT)
    raw_args = ["--repeats", str(args.repeats)]
    for n in sizes:
        raw_args += ["--bytes", str(n)]
    raw = {(int(r["bytes"]), r["generator"], r["kind"]): r for r in run_raw("raw_rng", *raw_args)}
    peers = {}
    for peer, module in (("PyTorch", "torch"), ("CuPy", "cupy")):
        try:
            __import__(module)
            peers[peer] = True
        except ImportError:
            print(f"{SCRIPT}: {peer} not importable, not measured")

    report = {"repeats": args.repeats, "results": [], "construction_ms": {}}
    print(f"{SCRIPT}: GB/s written (1e9 B/s), best of {args.repeats}, ratio vs raw cuRAND")
    for n in sizes:
        out = driver.mem_alloc(n)
        for generator in GENERATORS:
            for kind in KINDS:
                base = float(raw[(n, generator, kind)]["GBps"])
                row = {"bytes": n, "generator": generator, "kind": kind, "raw cuRAND": base}
                backends = ["curand"] + (["philox"] if generator == "philox" else [])
                for backend in backends:
                    fill = cuplug_fill(backend, generator, kind, out, n)
                    row[backend] = event_gbps(driver, n, fill, args.repeats)
                # PyTorch's generator is a Philox; CuPy's RandomState runs cuRAND's XORWOW or
                # Philox. Each is compared with raw cuRAND of that generator.
                peer_fills = {}
                if "PyTorch" in peers and generator == "philox":
                    peer_fills["PyTorch"] = (torch_fill, (kind, n))
                if "CuPy" in peers and generator in ("philox", "xorwow"):
                    peer_fills["CuPy"] = (cupy_fill, (kind, n, generator))
                for peer, (make, make_args) in peer_fills.items():
                    try:
                        fill = make(*make_args)
                        if fill is not None:
                            row[peer] = event_gbps(driver, n, fill, args.repeats)
                    except Exception as e:  # noqa: BLE001 - a broken peer must not hide ours
                        print(f"{SCRIPT}: {peer} failed: {type(e).__name__}: {e}")
                line = f"  {n >> 20:5d} MiB {generator:<18} {kind:<12} raw {base:7.1f}"
                for what in ("philox", "curand", "PyTorch", "CuPy"):
                    if what in row:
                        ratio = row[what] / base
                        row[f"{what}_ratio"] = ratio
                        goal = GOALS.get((what, generator, kind))
                        if what == "curand":
                            goal = CURAND_GOAL
                        verdict = ""
                        if goal is not None:
                            verdict = "" if ratio >= goal else f" (goal {goal}x MISSED)"
                        line += f"  {what} {row[what]:7.1f} ({ratio:4.2f}x){verdict}"
                print(line)
                report["results"].append(row)
        out.free()
    times = construction_ms(args.repeats)
    report["construction_ms"] = times
    for name, ms in times.items():
        verdict = "" if ms <= CONSTRUCTION_GOAL_MS else f" (goal {CONSTRUCTION_GOAL_MS} ms MISSED)"
        print(f"  construction {name:<40} {ms:7.2f} ms{verdict}")
    ctx.pop()
    write_json(args.json_out, report)


if __name__ == "__main__":
    main()
