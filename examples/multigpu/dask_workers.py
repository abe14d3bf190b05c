"""cuplug inside Dask workers, one GPU per worker (dask-cuda's LocalCUDACluster): each worker
process sees its own GPU as device 0 (dask-cuda sets CUDA_VISIBLE_DEVICES per worker), so a task
makes that device's primary context current, computes with GPUArrays and returns a host value.
No scheduler of cuplug's own: Dask places the tasks. Ray works the same way (docs/multigpu.md).

Run it: ``PYTHONPATH=build/python python examples/multigpu/dask_workers.py`` with dask-cuda
installed (``pip install dask-cuda``). Without it, or without a GPU, it says so and exits 0.
"""
# example-test: without-gpu, real-gpu

import sys

import numpy as np


def partial_sum(seed, n):
    """One task: n uniform values on this worker's GPU, summed there; returns (device, sum)."""
    import cuplug.driver as drv
    from cuplug import gpuarray, random

    drv.init()
    ctx = drv.Device(0).retain_primary_context()  # device 0 = the GPU this worker was given
    with ctx:
        values = random.Generator(seed=seed).random(n, np.float32)
        total = float(gpuarray.sum(values).get())
        return drv.Device(0).pci_bus_id(), total


def main():
    try:
        import cuplug.driver as drv

        drv.init()
        count = drv.Device.count()
    except Exception as e:  # noqa: BLE001 - no driver
        print(f"No usable GPU ({type(e).__name__}: {e}); this example needs one.")
        return 0
    if count == 0:
        print("No GPU found; this example needs one.")
        return 0
    try:
        from dask.distributed import Client
        from dask_cuda import LocalCUDACluster
    except ImportError as e:
        print(f"dask-cuda is not importable ({e}): pip install dask-cuda; GPU not used.")
        return 0
    n = 1 << 22
    with LocalCUDACluster(n_workers=count, threads_per_worker=1) as cluster, Client(cluster) as c:
        futures = [c.submit(partial_sum, seed, n, pure=False) for seed in range(4 * count)]
        results = c.gather(futures)
    buses = sorted({bus for bus, _ in results})
    mean = sum(total for _, total in results) / (len(results) * n)
    print(f"{len(results)} tasks on {len(buses)} GPU(s) ({', '.join(buses)}): mean {mean:.4f}")
    return 0 if abs(mean - 0.5) < 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
