"""cuplug, CuPy and PyTorch in one process on one context, handing arrays to each other while work
is still pending on the producer's stream: each producer's write is delayed on the GPU (a sleep
or a spin before it), so a consumer that were not ordered after it would read the old values.
Every hand-over is checked against NumPy. tools/gpu_check.sh also runs this module under
compute-sanitizer's racecheck and synccheck. Skipped, with the reason, without CuPy / PyTorch."""

import numpy as np
import pytest

pytestmark = pytest.mark.real_gpu
N = 1 << 20
SPIN = 100_000_000  # GPU clock cycles a producer waits before writing: tens of milliseconds

# A producer that writes late: one block spins, then fills x with v.
LATE_FILL = r"""
extern "C" __global__ void late_fill(float *x, int n, float v, long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    x[i] = v;
}
"""


@pytest.fixture(scope="module")
def libs():
    """cuplug on device 0's primary context (what cuplug.autoinit makes current), the one CuPy
    and PyTorch use."""
    try:
        import cupy
        import torch
    except Exception as e:  # noqa: BLE001 - ImportError, or a CUDA mismatch at import
        pytest.skip(f"CuPy and PyTorch are both needed: {e}")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    import cuplug.driver as drv

    drv.init()
    ctx = drv.Device(0).retain_primary_context()
    ctx.push()
    torch.zeros(1, device="cuda")  # PyTorch and CuPy set up their state on device 0
    cupy.zeros(1)
    yield drv, cupy, torch
    drv.Context.pop()


@pytest.fixture(scope="module")
def late_fill(libs):
    from cuplug.compiler import SourceModule

    return SourceModule(LATE_FILL).get_function("late_fill")


def test_the_three_libraries_share_one_context(libs):
    drv, cupy, torch = libs
    from cuplug import gpuarray

    ours = drv.Context.get_current().handle
    assert ours == cupy.cuda.driver.ctxGetCurrent()
    x = gpuarray.arange(10, dtype=np.float32)
    t = torch.from_dlpack(x)
    c = cupy.asarray(x)
    assert t.data_ptr() == c.data.ptr == x.ptr  # one address space, one allocation
    t += 1
    c *= 2
    torch.cuda.synchronize()
    np.testing.assert_array_equal(x.get(), (np.arange(10) + 1) * 2)


def test_a_torch_tensor_written_late_on_its_stream_is_read_after_the_write(libs):
    _, _, torch = libs
    from cuplug import gpuarray

    t = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(SPIN)
        t.fill_(3.0)
        a = gpuarray.from_dlpack(t)  # DLPack: PyTorch orders s before cuplug's stream
    np.testing.assert_array_equal((a * 2).get(), np.full(N, 6.0, np.float32))


def test_a_cupy_array_written_late_on_its_stream_is_read_after_the_write(libs):
    _, cupy, _ = libs
    from cuplug import gpuarray

    spin = cupy.RawKernel(LATE_FILL, "late_fill")
    c = cupy.zeros(N, cupy.float32)
    cupy.cuda.Device().synchronize()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        spin((1,), (256,), (c, np.int32(N), np.float32(5.0), np.int64(SPIN)))
        a = gpuarray.asarray(c)  # CUDA Array Interface v3 names s; cuplug's stream waits for it
    np.testing.assert_array_equal((a + 1).get(), np.full(N, 6.0, np.float32))


def test_a_gpuarray_written_late_is_read_by_torch_on_its_own_stream(libs, late_fill):
    _, _, torch = libs
    from cuplug import gpuarray

    x = gpuarray.zeros(N, np.float32)
    late_fill(x, np.int32(N), np.float32(7.0), np.int64(SPIN), block=(256, 1, 1), grid=(1, 1))
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t = torch.from_dlpack(x)  # __dlpack__(stream=s): s waits for cuplug's pending write
        doubled = t * 2
    s.synchronize()
    np.testing.assert_array_equal(doubled.cpu().numpy(), np.full(N, 14.0, np.float32))


def test_a_gpuarray_written_late_is_read_by_cupy_on_its_own_stream(libs, late_fill):
    _, cupy, _ = libs
    from cuplug import gpuarray

    x = gpuarray.zeros(N, np.float32)
    late_fill(x, np.int32(N), np.float32(9.0), np.int64(SPIN), block=(256, 1, 1), grid=(1, 1))
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        c = cupy.asarray(x)  # CUDA Array Interface v3: stream 1, which CuPy orders itself after
        tripled = c * 3
    s.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(tripled), np.full(N, 27.0, np.float32))


def test_a_kernel_reads_torch_and_cupy_arrays_pending_on_their_streams(libs, late_fill):
    _, cupy, torch = libs
    import cuplug.driver as drv
    from cuplug import gpuarray
    from cuplug.compiler import SourceModule

    add = SourceModule(
        "__global__ void add(float *z, const float *x, const float *y, int n)"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) z[i] = x[i] + y[i]; }"
    ).get_function("add")
    t = torch.zeros(N, device="cuda")
    c = cupy.zeros(N, cupy.float32)
    torch.cuda.synchronize()
    cupy.cuda.Device().synchronize()
    ts, cs = torch.cuda.Stream(), cupy.cuda.Stream(non_blocking=True)
    with torch.cuda.stream(ts):
        torch.cuda._sleep(SPIN)
        t.fill_(1.0)
        # PyTorch's CUDA Array Interface is version 2, without a stream: the tensor comes in
        # through DLPack, which orders ts before cuplug's stream.
        tx = gpuarray.from_dlpack(t)
    with cs:
        cupy.RawKernel(LATE_FILL, "late_fill")(
            (1,), (256,), (c, np.int32(N), np.float32(2.0), np.int64(SPIN))
        )
        z = gpuarray.empty(N, np.float32)
        # The CuPy array is a kernel argument as it is: its CUDA Array Interface v3 names cs
        # (current here), which the launch waits for.
        add(z, tx, c, np.int32(N), block=(256, 1, 1), grid=(N // 256, 1))
    drv.Context.synchronize()
    np.testing.assert_array_equal(z.get(), np.full(N, 3.0, np.float32))
