"""Monte Carlo estimate of pi, once per rng backend: points (x, y) uniform in the unit square,
pi ~ 4 x (the share with x^2 + y^2 <= 1). ``cuplug.use(rng="philox")`` (cuplug's own kernels)
and ``"curand"`` (cuRAND's Philox) draw the same points from the same seed, so both lines print
the same count and the same estimate, to the last digit.

Run it: ``PYTHONPATH=build/python python examples/monte_carlo_pi.py``. Without a GPU it draws
the points on the CPU instead, through the backends' host reference paths (memory=host), which
give the GPU's values too.
"""
# example-test: without-gpu, real-gpu

import numpy as np

import cuplug
from cuplug import _core

BACKENDS = ("philox", "curand")
SEED = 2024


def on_gpu(backend, n):
    """Inside-circle count of n points drawn on the GPU through cuplug.random."""
    from cuplug import gpuarray, random

    with cuplug.using(rng=backend):
        g = random.default_rng(SEED)
        x = g.random(n, dtype=np.float32)
        y = g.random(n, dtype=np.float32)
    inside = (x * x + y * y <= 1).astype(np.int64)
    return int(gpuarray.sum(inside).get())


def on_cpu(backend, n):
    """The same count from the backend's host reference path, into NumPy arrays."""
    options = {"memory": "host", **({"generator": "philox"} if backend == "curand" else {})}
    g = _core.rng.create(backend, options)
    g.seed(SEED)
    x, y = np.empty(n, np.float32), np.empty(n, np.float32)
    g.generate("uniform", "float32", x.ctypes.data, n)
    g.generate("uniform", "float32", y.ctypes.data, n)
    return int(np.count_nonzero(x * x + y * y <= 1))


def gpu_present():
    return cuplug.is_available()


def main():
    if gpu_present():
        import cuplug.autoinit  # noqa: F401  (a context for the GPU's work)

        n, count, where = 50_000_000, on_gpu, "on the GPU"
    else:
        n, count, where = 2_000_000, on_cpu, "on the CPU (no GPU here)"
    print(f"pi from {n} random points {where}, seed {SEED}:")
    counts = {}
    for backend in BACKENDS:
        counts[backend] = count(backend, n)
        print(f"  rng={backend:<7} {counts[backend]} inside: pi ~ {4 * counts[backend] / n:.8f}")
    if len(set(counts.values())) != 1:
        raise SystemExit("the backends disagree: they should draw identical points")
    print("identical: switching the rng backend changed nothing")


if __name__ == "__main__":
    main()
