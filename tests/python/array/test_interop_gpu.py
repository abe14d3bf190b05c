"""Zero-copy exchange with CuPy and PyTorch on a real GPU: both directions through DLPack and the
CUDA Array Interface, memory shared (a write on one side is seen on the other), lifetimes (the
consumer keeps the producer's memory alive), strides, streams, and NumPy conversion.
Skipped, with the reason, when CuPy or PyTorch is not importable."""

import gc

import numpy as np
import pytest

pytestmark = pytest.mark.real_gpu


@pytest.fixture(scope="module")
def cupy(gpu):
    try:
        import cupy
    except Exception as e:  # noqa: BLE001 - ImportError, or a CUDA mismatch at import
        pytest.skip(f"CuPy is not importable: {e}")
    return cupy


@pytest.fixture(scope="module")
def torch(gpu):
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"PyTorch is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    return torch


def test_numpy_conversion(gpu):
    from cuplug import gpuarray

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = gpuarray.to_gpu(x)
    np.testing.assert_array_equal(np.asarray(a), x)
    np.testing.assert_array_equal(np.asarray(a[:, ::2]), x[:, ::2])
    np.testing.assert_array_equal(np.from_dlpack(a, device="cpu"), x)


def test_cupy_takes_gpuarrays_without_a_copy(cupy):
    from cuplug import gpuarray

    x = np.arange(20, dtype=np.float64).reshape(4, 5)
    a = gpuarray.to_gpu(x)
    for c in (cupy.from_dlpack(a), cupy.asarray(a)):  # DLPack, CUDA Array Interface
        assert c.data.ptr == a.ptr
        np.testing.assert_array_equal(cupy.asnumpy(c), x)
    c = cupy.from_dlpack(a[:, ::-2])
    np.testing.assert_array_equal(cupy.asnumpy(c), x[:, ::-2])
    c = cupy.from_dlpack(a)
    c[0, 0] = -1  # shared memory: the write shows in the GPUArray
    cupy.cuda.Device().synchronize()
    assert a.get()[0, 0] == -1


def test_gpuarrays_take_cupy_arrays_without_a_copy(cupy):
    from cuplug import gpuarray

    c = cupy.arange(30, dtype=cupy.int32).reshape(5, 6)
    for a in (gpuarray.from_dlpack(c), gpuarray.asarray(c)):
        assert a.ptr == c.data.ptr and a.dtype == np.int32 and a.shape == (5, 6)
        np.testing.assert_array_equal(a.get(), cupy.asnumpy(c))
    t = c.T[::2]
    a = gpuarray.asarray(t)
    assert a.strides == t.strides
    np.testing.assert_array_equal(a.get(), cupy.asnumpy(t))
    # Arithmetic on the shared memory, read back by CuPy.
    b = gpuarray.from_dlpack(c)
    b += 1
    np.testing.assert_array_equal(cupy.asnumpy(c), np.arange(30).reshape(5, 6) + 1)


def test_imported_memory_outlives_its_producer(cupy):
    from cuplug import gpuarray

    c = cupy.full(1 << 20, 3.0, dtype=cupy.float32)
    a = gpuarray.from_dlpack(c)
    del c
    gc.collect()
    cupy.get_default_memory_pool().free_all_blocks()  # would free it if nothing held it
    assert float(a.get()[-1]) == 3.0


def test_torch_round_trips(torch):
    from cuplug import gpuarray

    t = torch.arange(24, dtype=torch.float32, device="cuda").reshape(4, 6)
    a = gpuarray.from_dlpack(t)
    assert a.ptr == t.data_ptr()
    np.testing.assert_array_equal(a.get(), t.cpu().numpy())
    back = torch.from_dlpack(a)
    assert back.data_ptr() == t.data_ptr()
    a2 = gpuarray.asarray(t[:, 1::2])
    np.testing.assert_array_equal(a2.get(), t[:, 1::2].cpu().numpy())
    x = gpuarray.to_gpu(np.linspace(0, 1, 100).astype(np.float64))
    tx = torch.from_dlpack(x)
    tx.mul_(2)
    torch.cuda.synchronize()
    np.testing.assert_allclose(x.get(), np.linspace(0, 2, 100))
    for dtype in (torch.bool, torch.int8, torch.int64, torch.float16, torch.complex64):
        t = torch.ones(5, dtype=dtype, device="cuda")
        assert gpuarray.from_dlpack(t).dtype == np.dtype(str(t.cpu().numpy().dtype))


def test_torch_on_its_own_stream(torch):
    from cuplug import gpuarray

    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t = torch.full((1 << 22,), 5.0, device="cuda")
        a = gpuarray.from_dlpack(t)  # our legacy stream waits for PyTorch's
    doubled = a * 2
    assert float(doubled.get()[-1]) == 10.0


def test_kernels_wait_for_the_stream_a_cuda_array_interface_names(torch):
    # CUDA Array Interface v3: a device array handed to a cuplug kernel names the stream its
    # pending work is on; the kernel (on cuplug's default stream) runs after that work. PyTorch
    # exports version 2 (no stream), so the producer here is a torch tensor described as v3 with
    # the non-blocking stream s that wrote it: without the ordering the kernel would read the
    # zeros from before the sleep.
    import cuplug.driver as drv
    from cuplug import gpuarray
    from cuplug.compiler import SourceModule

    copy = SourceModule(
        "__global__ void copy(float *y, const float *x, int n)"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }"
    ).get_function("copy")
    n = 1 << 20
    t = torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    out = gpuarray.empty(n, np.float32)
    s = torch.cuda.Stream()

    class OnStream:
        __cuda_array_interface__ = {
            **t.__cuda_array_interface__,
            "version": 3,
            "stream": s.cuda_stream,
        }

    with torch.cuda.stream(s):
        torch.cuda._sleep(100_000_000)  # about 50 ms of GPU time on s
        t.fill_(3.0)
    copy(out, OnStream(), np.int32(n), block=(256, 1, 1), grid=(n // 256, 1))
    drv.Context.synchronize()
    assert np.all(out.get() == 3.0)


def test_cuda_array_interface_names_a_stream_and_zero_size(cupy):
    from cuplug import gpuarray

    a = gpuarray.zeros((0, 4), np.float32)
    cai = a.__cuda_array_interface__
    assert cai["data"][0] == 0 and cai["version"] == 3 and cai["stream"] is None
    assert cupy.asarray(a).shape == (0, 4)
