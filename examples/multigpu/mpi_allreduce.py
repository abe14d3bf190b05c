"""mpi4py on cuplug arrays: with a CUDA-aware MPI (Open MPI built with UCX / --with-cuda,
MVAPICH2-GDR, Cray MPICH with MPICH_GPU_SUPPORT_ENABLED=1), ``comm.Allreduce`` takes GPUArrays
as they are, through their ``__cuda_array_interface__``: the MPI library reads and writes device
memory, no copy through NumPy. Each rank uses GPU ``rank % number of GPUs`` and checks the sum.

Run it: ``mpirun -n 2 env PYTHONPATH=build/python python examples/multigpu/mpi_allreduce.py``.
Alone (``python examples/multigpu/mpi_allreduce.py``) it is one rank. Without mpi4py, or with an
MPI that is not CUDA-aware, it says so and exits 0 (set CUPLUG_MPI_REQUIRE_CUDA=1 to fail then).
"""
# example-test: without-gpu, real-gpu

import os
import sys

import numpy as np


def cuda_aware(MPI):
    """Whether this MPI says it handles device memory (Open MPI's extension; others: assume so
    only when CUPLUG_MPI_CUDA_AWARE=1)."""
    if os.environ.get("CUPLUG_MPI_CUDA_AWARE") == "1":
        return True
    try:
        from mpi4py.MPI import Query_cuda_support  # mpi4py >= 4 with Open MPI's extension

        return bool(Query_cuda_support())
    except ImportError:
        return "CUDA" in MPI.Get_library_version().upper()


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
    if not cuda_aware(MPI):
        print(f"rank {rank}: this MPI is not CUDA-aware ({MPI.Get_library_version().strip()}).")
        return 1 if os.environ.get("CUPLUG_MPI_REQUIRE_CUDA") == "1" else 0

    from cuplug import gpuarray

    ctx = drv.Device(rank % count).retain_primary_context()
    ctx.push()
    try:
        send = gpuarray.to_gpu(np.full(1 << 16, rank + 1, np.float64))
        recv = gpuarray.empty_like(send)
        drv.Context.synchronize()  # MPI reads device memory without knowing our streams
        comm.Allreduce(send, recv, op=MPI.SUM)
        expected = size * (size + 1) / 2
        ok = bool(np.all(recv.get() == expected))
    finally:
        drv.Context.pop()
    oks = comm.allgather(ok)
    if rank == 0:
        print(f"MPI Allreduce on GPUArrays over {size} rank(s): {'OK' if all(oks) else 'WRONG'}")
    return 0 if all(oks) else 1


if __name__ == "__main__":
    sys.exit(main())
