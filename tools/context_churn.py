"""Make and destroy many CUDA contexts in one process, to tell a tool's limit from cuplug's own:
`ctypes` goes straight to libcuda (cuCtxCreate / cuCtxDestroy, nothing of cuplug), `cuplug`
goes through cuplug.driver (make_context / pop / detach, and a small kernel in each context).
Run under compute-sanitizer, the two say whether a crash after N contexts (the GPU tests make
one per test) is the sanitizer's or cuplug's.

Usage: python tools/context_churn.py {ctypes|cuplug} COUNT
Prints a line every 100 contexts and "done COUNT" at the end.
"""

from __future__ import annotations

import ctypes
import sys


def churn_ctypes(count: int) -> None:
    cuda = ctypes.CDLL("libcuda.so.1")

    def check(status, what):
        if status != 0:
            raise SystemExit(f"{what} failed with CUresult {status}")

    check(cuda.cuInit(0), "cuInit")
    device = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    create = cuda.cuCtxCreate_v2
    for i in range(count):
        ctx = ctypes.c_void_p()
        check(create(ctypes.byref(ctx), 0, device), f"cuCtxCreate #{i}")
        check(cuda.cuCtxDestroy_v2(ctx), f"cuCtxDestroy #{i}")
        if (i + 1) % 100 == 0:
            print(f"ctypes: {i + 1} contexts", flush=True)


def churn_cuplug(count: int) -> None:
    import numpy as np

    import cuplug.driver as drv
    from cuplug import gpuarray

    drv.init()
    for i in range(count):
        ctx = drv.Device(0).make_context()
        try:
            x = gpuarray.arange(64, dtype=np.float32)
            assert float((x * 2).get()[-1]) == 126.0
        finally:
            drv.Context.pop()
            ctx.detach()
        if (i + 1) % 100 == 0:
            print(f"cuplug: {i + 1} contexts", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("ctypes", "cuplug"):
        raise SystemExit(__doc__)
    mode, n = sys.argv[1], int(sys.argv[2])
    (churn_ctypes if mode == "ctypes" else churn_cuplug)(n)
    print(f"done {n}")
