"""Everyday cuplug code, annotated as a user of a typed library writes it: mypy and basedpyright
check this file against the package (tests/python/package/test_typing.py) and must report no
error. It is not collected as a test and never run: every line is only type-checked, so it needs
no GPU. Each `x: T = expr` states the type the API promises; a stub or annotation that loses an
attribute, or gives Any where a type was promised (the `assert_type` calls), is an error here.

A line added here is a promise to users: keep it to what the documentation shows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

import cuplug
import cuplug.driver as drv
from cuplug import cumath, curandom, gpuarray
from cuplug.compiler import SourceModule
from cuplug.elementwise import ElementwiseKernel
from cuplug.gpuarray import GPUArray
from cuplug.reduction import ReductionKernel

if TYPE_CHECKING:
    # typing's from Python 3.11; the checkers bring typing_extensions' stubs themselves.
    from typing_extensions import assert_type


def availability() -> tuple[bool, int]:
    available: bool = cuplug.is_available()
    count: int = cuplug.device_count()
    return available, count


def backends() -> dict[str, str]:
    previous: dict[str, str] = cuplug.use(allocator="device")
    with cuplug.using(compiler="nvrtc", launcher=None):
        pass
    with cuplug.using("pool", allocator_options={"limit": "4GiB"}):
        pass
    cuplug.use(**previous)
    return previous


def arrays() -> np.ndarray:
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    a: GPUArray = gpuarray.to_gpu(host)
    b: GPUArray = gpuarray.zeros((3, 4), dtype=np.float32)
    c: GPUArray = gpuarray.empty_like(a)
    d: GPUArray = gpuarray.ones(12, np.float64).reshape(3, 4)
    e = gpuarray.arange(0, 12, 1, dtype=np.int32)

    # Attributes of the array class (the C layout) and of GPUArray.
    shape: tuple[int, ...] = a.shape
    dtype: np.dtype = a.dtype
    size: int = a.size
    nbytes: int = a.nbytes
    strides: tuple[int, ...] = a.strides
    ptr: int = a.ptr
    ndim: int = a.ndim
    itemsize: int = a.itemsize
    del shape, dtype, size, nbytes, strides, ptr, ndim, itemsize
    rows: int = a.shape[0]
    del rows

    # Arithmetic and comparisons stay arrays (NumPy's semantics, on the device).
    s: GPUArray = a + b
    s = a * 2.0 - b / 3 + 1
    s = 2 * a
    s = -a
    s = abs(a)
    s = a**2
    mask: GPUArray = a > b
    mask = a == 0
    s += b
    s *= 2
    assert_type(a + b, GPUArray)
    assert_type(a[1:, ::2], GPUArray)
    assert_type(a.T, GPUArray)
    assert_type(a.copy(), GPUArray)
    assert_type(a.astype(np.float64), GPUArray)
    assert_type(a.ravel(), GPUArray)
    assert_type(a.view(), GPUArray)
    assert_type(a.transpose(), GPUArray)
    assert_type(a.fill(0), GPUArray)
    assert_type(d, GPUArray)
    assert_type(e, GPUArray)
    assert_type(c, GPUArray)
    assert_type(mask, GPUArray)

    # Reductions: arrays (0-d for a whole-array reduction), as PyCUDA.
    total: GPUArray = gpuarray.sum(a)
    assert_type(total, GPUArray)
    assert_type(gpuarray.dot(a, b), GPUArray)
    assert_type(gpuarray.max(a), GPUArray)
    assert_type(gpuarray.minimum(a, b), GPUArray)
    assert_type(gpuarray.where(mask, a, b), GPUArray)
    assert_type(gpuarray.concatenate([a, b]), GPUArray)
    assert_type(a.sum(), GPUArray)
    # cumath (functions made from the operation table: its stub lists them) and curandom.
    assert_type(cumath.sin(a), GPUArray)
    assert_type(cumath.power(a, 2), GPUArray)
    mantissa, exponent = cumath.frexp(a)
    gauss = cuplug.fuse(lambda x, s: cumath.exp(-x * x / 2) * s)
    fused_result: GPUArray = gauss(a, 2.0)
    assert_type(fused_result, GPUArray)
    assert_type(mantissa, GPUArray)
    assert_type(curandom.rand((3, 4), dtype=np.float64), GPUArray)
    # Kernels made from C snippets.
    axpy = ElementwiseKernel("float a, float *x, float *y", "y[i] = a * x[i] + y[i]", "axpy")
    axpy(np.float32(2), a, b)
    norm = ReductionKernel(np.float32, "0", "a + b", "x[i] * x[i]", "float *x")
    assert_type(norm(a), GPUArray)
    value: float = float(total.get())
    del value

    # Back to the host.
    out: np.ndarray = a.get()
    a.set(host)
    gpuarray.to_gpu(host, allocator=None).get(out)
    return out


def kernels() -> None:
    drv.init()
    device: drv.Device = drv.Device(0)
    name: str = device.name()
    del name
    context: drv.Context = device.make_context()
    try:
        mod = SourceModule(
            """
            __global__ void twice(float *x, int n)
            {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) x[i] *= 2;
            }
            """
        )
        twice: drv.Function = mod.get_function("twice")
        a = gpuarray.to_gpu(np.ones(256, dtype=np.float32))
        twice(a, np.int32(a.size), block=(256, 1, 1), grid=(1, 1))
        twice(a.gpudata, np.int32(a.size), block=(256, 1, 1), grid=(1, 1))
        stream = drv.Stream()
        twice.prepare("Pi")
        twice.prepared_async_call((1, 1), (256, 1, 1), stream, a.ptr, a.size)
        stream.synchronize()
        drv.Context.synchronize()
        current: drv.Context | None = drv.Context.get_current()
        del current
    finally:
        context.pop()
