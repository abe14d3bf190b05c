"""NCCL collectives on cuplug arrays, one process per GPU, through CuPy's NCCL binding
(``cupy.cuda.nccl``): all-reduce, all-gather and broadcast read and write the GPUArrays' own
memory (their ``__cuda_array_interface__`` pointer) on a cuplug stream (its handle), with no copy.
Each rank checks the results against NumPy; the script exits 1 if any rank saw a wrong value.

Run it: ``PYTHONPATH=build/python python examples/multigpu/nccl_allreduce.py`` (every GPU of the
machine, one rank each; one GPU works too). Needs CuPy with NCCL (cupy-cuda13x brings it).
"""
# example-test: without-gpu, real-gpu

import multiprocessing as mp
import sys

import numpy as np

N = 1 << 20  # elements per rank


def rank_main(rank, nranks, uid, results):
    import cupy
    from cupy.cuda import nccl

    import cuplug.driver as drv
    from cuplug import gpuarray

    drv.init()
    ctx = drv.Device(rank).retain_primary_context()
    ctx.push()  # cuplug's arrays and kernels land on this rank's GPU
    cupy.cuda.Device(rank).use()  # the runtime (NCCL) uses the same primary context
    try:
        stream = drv.Stream()
        comm = nccl.NcclCommunicator(nranks, uid, rank)

        def ptr(a):
            return a.__cuda_array_interface__["data"][0]

        # all-reduce: rank r contributes (r + 1) * base; the sum is base * n(n+1)/2 (values
        # small enough for float32 to add exactly in any order).
        base = (np.arange(N) % 1024).astype(np.float32)
        send = gpuarray.to_gpu(base * (rank + 1))
        recv = gpuarray.empty_like(send)
        comm.allReduce(ptr(send), ptr(recv), N, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.handle)
        # all-gather: rank r contributes a block of r's; everyone gets 0, 1, ..., n-1 blocks.
        block = gpuarray.to_gpu(np.full(1024, rank, np.int32))
        gathered = gpuarray.empty(1024 * nranks, np.int32)
        comm.allGather(ptr(block), ptr(gathered), 1024, nccl.NCCL_INT32, stream.handle)
        # broadcast from the last rank.
        root = nranks - 1
        value = gpuarray.to_gpu(np.full(4096, 7.0 if rank == root else -1.0))
        comm.broadcast(ptr(value), ptr(value), 4096, nccl.NCCL_FLOAT64, root, stream.handle)
        stream.synchronize()

        ok = bool(
            np.array_equal(recv.get(), base * (nranks * (nranks + 1) // 2))
            and np.array_equal(gathered.get(), np.repeat(np.arange(nranks, dtype=np.int32), 1024))
            and np.all(value.get() == 7.0)
            and recv.device == drv.Device(rank)
        )
        results.put((rank, ok, ""))
    except Exception as e:  # noqa: BLE001 - reported by the parent
        results.put((rank, False, f"{type(e).__name__}: {e}"))
    finally:
        drv.Context.pop()


def main():
    try:
        import cuplug.driver as drv

        drv.init()
        nranks = drv.Device.count()
    except Exception as e:  # noqa: BLE001 - no driver, no GPU
        print(f"No usable GPU ({type(e).__name__}: {e}); this example needs one GPU or more.")
        return 0
    if nranks == 0:
        print("No GPU found; this example needs one GPU or more.")
        return 0
    try:
        from cupy.cuda import nccl
    except ImportError as e:
        print(f"CuPy's NCCL binding is not importable ({e}): install cupy-cuda13x; GPU not used.")
        return 0
    if not getattr(nccl, "available", True):
        print("CuPy finds no NCCL library (pip install nvidia-nccl-cu13); GPU not used.")
        return 0
    uid = nccl.get_unique_id()
    spawn = mp.get_context("spawn")  # CUDA does not survive fork
    results = spawn.Queue()
    procs = [spawn.Process(target=rank_main, args=(r, nranks, uid, results)) for r in range(nranks)]
    for p in procs:
        p.start()
    outcomes = sorted(results.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(60)
    bad = [o for o in outcomes if not o[1]]
    for rank, ok, why in outcomes:
        print(f"rank {rank} (GPU {rank}): {'sums check' if ok else 'WRONG ' + why}")
    if bad:
        print(f"NCCL collectives FAILED on {len(bad)} of {nranks} GPU(s)")
        return 1
    print(f"NCCL all-reduce, all-gather and broadcast OK on {nranks} GPU(s), zero copies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
