"""cuplug inside Dask workers, one GPU per worker process: a ``distributed.LocalCluster`` whose
worker processes each start with ``CUDA_VISIBLE_DEVICES`` set to one GPU (what dask-cuda's
LocalCUDACluster does; dask-cuda itself is not needed), so inside a worker its GPU is device 0.

Each part of the work is three tasks: ``upload`` copies host values to a worker's GPU,
``scale`` runs a kernel there (y = 2 x + 1), and ``combine`` runs on *another* worker: Dask
hands it the GPUArray y, which it reduces with that worker's own data (dot product and sum).
The parent checks every number against NumPy, checks that each hand-over crossed to the other
GPU, and times the same work on one GPU and on all of them.

How a GPUArray moves between workers: Dask pickles it. A GPUArray pickles as its values in host
memory (read under its own context) and unpickles onto the receiving thread's current device,
or device 0 (the worker's GPU) where none is current, as in a worker's communication thread. So
a hand-over goes device -> host -> TCP -> host -> device: Dask's TCP transport carries host
memory only (CuPy's arrays take the same route there); device-to-device transfers would need
Dask's UCX transport, which this example does not use.

Run it: ``PYTHONPATH=build/python python examples/multigpu/dask_workers.py`` with ``dask`` and
``distributed`` installed (``pip install dask distributed``). Without them, or without a GPU, it
says so and exits 0. ``--parts N`` and ``--size N`` change the work (default 8 parts of 2^22
float32 values).
"""
# example-test: without-gpu
# (On GPUs: driver/test_multidevice_gpu.py runs it and checks its lines, once per multi-GPU run.)

import argparse
import copy
import os
import sys
import time

import numpy as np


def host_values(seed, n):
    """The values of one part, made on the host (the parent makes them again to check)."""
    return np.random.default_rng(seed).standard_normal(n, dtype=np.float32)


def _worker_context():
    """This worker's GPU (device 0 of what CUDA_VISIBLE_DEVICES lets the process see) as one
    Context object for the worker's life, kept on the Dask worker (each retain_primary_context()
    call makes a new one)."""
    from distributed import get_worker

    import cuplug.driver as drv

    try:
        worker = get_worker()
    except ValueError:  # called outside a Dask task
        worker = None
    ctx = getattr(worker, "cuplug_context", None)
    if ctx is None:
        drv.init()
        ctx = drv.Device(0).retain_primary_context()
        if worker is not None:
            worker.cuplug_context = ctx
    return ctx


def where():
    """Where this worker computes: its CUDA_VISIBLE_DEVICES, how many devices it sees, and the PCI
    bus id of its device 0."""
    import cuplug.driver as drv

    drv.init()
    pinned = os.environ.get("CUDA_VISIBLE_DEVICES")
    return {"pinned": pinned, "count": drv.Device.count(), "bus": drv.Device(0).pci_bus_id()}


def upload(seed, n):
    """Task 1: one part's values on this worker's GPU (a copy; no kernel)."""
    from cuplug import gpuarray

    with _worker_context():
        return gpuarray.to_gpu(host_values(seed, n))


def scale(x):
    """Task 2, on the worker that holds x: y = 2 x + 1 (a kernel), left on this GPU."""
    with _worker_context():
        return 2 * x + 1


def combine(y, seed, n):
    """Task 3, on another worker: y arrived through Dask; y . own and sum(y), computed on this
    worker's GPU, with the PCI bus ids of this GPU and of the one y landed on."""
    import cuplug.driver as drv
    from cuplug import gpuarray

    with _worker_context():
        own = gpuarray.to_gpu(host_values(seed, n))
        return {
            "dot": float(gpuarray.dot(y, own).get()),
            "sum": float(gpuarray.sum(y).get()),
            "here": drv.Device(0).pci_bus_id(),
            "y_on": y.device.pci_bus_id(),
        }


def visible_devices():
    """The GPUs this process may hand to workers: CUDA_VISIBLE_DEVICES's entries when it is set,
    else every device's ordinal."""
    pinned = os.environ.get("CUDA_VISIBLE_DEVICES")
    if pinned is not None:
        return [d.strip() for d in pinned.split(",") if d.strip()]
    import cuplug.driver as drv

    drv.init()
    return [str(d) for d in range(drv.Device.count())]


def gpu_cluster(devices, **kwargs):
    """A LocalCluster of one worker process (one thread) per GPU of `devices`, each started with
    CUDA_VISIBLE_DEVICES set to its GPU and named ``gpu-<device>``; kwargs go to LocalCluster."""
    from distributed import LocalCluster

    devices = [str(d) for d in devices]
    known = visible_devices()
    unknown = [d for d in devices if d not in known]
    if unknown or not devices or len(set(devices)) != len(devices):
        raise ValueError(
            f"gpu_cluster: devices must be distinct GPUs of this process ({', '.join(known)}), "
            f"got {devices}"
        )

    class OneWorkerPerGPU(LocalCluster):
        def new_worker_spec(self):
            free = [d for d in devices if f"gpu-{d}" not in self.worker_spec]
            if not free:
                raise ValueError(
                    f"one worker per GPU: every GPU given ({', '.join(devices)}) has its worker"
                )
            spec = copy.deepcopy(self.new_spec)
            options = spec["options"]
            options["env"] = {**options.get("env", {}), "CUDA_VISIBLE_DEVICES": free[0]}
            return {f"gpu-{free[0]}": spec}

    options = {"dashboard_address": None, **kwargs}
    cluster = OneWorkerPerGPU(n_workers=0, threads_per_worker=1, processes=True, **options)
    cluster.scale(len(devices))
    return cluster


def placement(client):
    """Each worker's name and where() answer, by name."""
    workers = client.scheduler_info()["workers"]
    return {workers[address]["name"]: info for address, info in client.run(where).items()}


def run_parts(client, names, parts, n):
    """Submits every part (upload and scale on one worker, combine on the next one) and gathers
    the results; returns them, the (home, other) worker names of each part, and the seconds it
    took."""
    start = time.perf_counter()
    futures, routes = [], []
    for k in range(parts):
        home, other = names[k % len(names)], names[(k + 1) % len(names)]
        x = client.submit(upload, k, n, workers=[home], pure=False)
        y = client.submit(scale, x, workers=[home], pure=False)
        futures.append(client.submit(combine, y, 1000 + k, n, workers=[other], pure=False))
        routes.append((home, other))
    results = client.gather(futures)
    return results, routes, time.perf_counter() - start


def check(results, n):
    """Every part's numbers against NumPy (float64): the number of parts that agree."""
    good = 0
    for k, r in enumerate(results):
        y = 2 * host_values(k, n).astype(np.float64) + 1
        own = host_values(1000 + k, n).astype(np.float64)
        good += bool(
            np.isclose(r["dot"], y @ own, rtol=1e-4, atol=1e-2 * np.sqrt(n))
            and np.isclose(r["sum"], y.sum(), rtol=1e-4, atol=1e-2 * np.sqrt(n))
        )
    return good


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--size", type=int, default=1 << 22)
    args = parser.parse_args(argv)
    try:
        devices = visible_devices()
    except Exception as e:  # noqa: BLE001 - no driver
        print(f"No usable GPU ({type(e).__name__}: {e}); this example needs one.")
        return 0
    if not devices:
        print("No GPU found; this example needs one.")
        return 0
    try:
        from distributed import Client
    except ImportError as e:
        print(f"Dask is not importable ({e}): pip install dask distributed; GPU not used.")
        return 0
    timings = {}
    for used in sorted({1, len(devices)}):
        with gpu_cluster(devices[:used]) as cluster, Client(cluster) as client:
            client.wait_for_workers(used, timeout=120)
            placed = placement(client)
            names = sorted(placed)
            run_parts(client, names, min(args.parts, 2), 1 << 10)  # compiles the kernels
            results, routes, seconds = run_parts(client, names, args.parts, args.size)
        timings[used] = seconds
        bus = {name: info["bus"] for name, info in placed.items()}
        good = check(results, args.size)
        # Each combine ran on the worker it was sent to, with y on that worker's GPU, and (with
        # several GPUs) y was made on another GPU.
        handed = sum(
            r["here"] == r["y_on"] == bus[other] and (used == 1 or bus[home] != bus[other])
            for r, (home, other) in zip(results, routes)
        )
        print(
            f"{used} GPU(s) ({', '.join(sorted(bus.values()))}): {args.parts} parts of "
            f"{args.size} float32, {good}/{len(results)} match NumPy, "
            f"{handed}/{len(results)} handed over as placed, {seconds:.3f} s"
        )
        if good != len(results) or handed != len(results):
            print("WRONG")
            return 1
        if len(set(bus.values())) != used or any(p["count"] != 1 for p in placed.values()):
            print(f"WRONG: the workers were not pinned to one GPU each: {placed}")
            return 1
    if len(devices) > 1:
        ratio = timings[1] / timings[len(devices)]
        print(f"{len(devices)} GPUs vs 1: {ratio:.2f}x faster (Dask, through host memory): OK")
    else:
        print("1 GPU only: no hand-over between GPUs to show: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
