"""ElementwiseKernel on a real GPU against NumPy: contiguous, strided (negative steps too),
broadcast and 0-d operands, PyCUDA's flat semantics, range=/slice=, streams, and PyCUDA's
prepared-function generators."""

import numpy as np
import pytest

from cuplug.elementwise import ElementwiseKernel

pytestmark = pytest.mark.real_gpu


def host(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


AXPBY = ElementwiseKernel(
    "float *z, float a, const float *x, float b, const float *y",
    "z[i] = a * x[i] + b * y[i]",
    "axpby",
)


def test_contiguous(gpu):
    from cuplug import gpuarray

    x, y = host(10007), host(10007, seed=1)
    z = gpuarray.empty_like(gpuarray.to_gpu(x))
    AXPBY(z, 2.0, gpuarray.to_gpu(x), np.float32(-3), gpuarray.to_gpu(y))
    np.testing.assert_allclose(z.get(), 2 * x - 3 * y, rtol=1e-6)


def test_strided_and_negative_strides(gpu):
    from cuplug import gpuarray

    x, y = host((64, 50)), host((64, 50), seed=1)
    gx, gy = gpuarray.to_gpu(x), gpuarray.to_gpu(y)
    z = gpuarray.zeros((32, 25), np.float32)
    AXPBY(z, 1.0, gx[::2, ::2], 1.0, gy[::-2, 1::2])
    np.testing.assert_allclose(z.get(), x[::2, ::2] + y[::-2, 1::2], rtol=1e-6)
    zt = gpuarray.zeros((50, 64), np.float32)
    AXPBY(zt, 1.0, gx.T, 0.0, gy.T)
    np.testing.assert_allclose(zt.get(), x.T, rtol=1e-6)


def test_broadcast_operands(gpu):
    from cuplug import gpuarray

    a, row, col = host((30, 40)), host(40, seed=1), host((30, 1), seed=2)
    z = gpuarray.empty((30, 40), np.float32)
    AXPBY(z, 1.0, gpuarray.to_gpu(a), 2.0, gpuarray.to_gpu(row))
    np.testing.assert_allclose(z.get(), a + 2 * row, rtol=1e-6)
    AXPBY(z, 1.0, gpuarray.to_gpu(col), 1.0, gpuarray.to_gpu(row))
    np.testing.assert_allclose(z.get(), col + row, rtol=1e-6)
    zero_d = gpuarray.to_gpu(np.array(5.0, np.float32))
    AXPBY(z, 1.0, zero_d, 0.0, gpuarray.to_gpu(row))
    np.testing.assert_allclose(z.get(), np.full((30, 40), 5.0, np.float32))


def test_written_broadcast_operand_is_refused(gpu):
    from cuplug import gpuarray

    with pytest.raises(ValueError):
        AXPBY(
            gpuarray.empty(40, np.float32),
            1.0,
            gpuarray.empty((30, 40), np.float32),
            1.0,
            gpuarray.empty((30, 40), np.float32),
        )


def test_pycuda_flat_semantics_for_equal_sizes(gpu):
    from cuplug import gpuarray

    x = host((2, 5))
    z = gpuarray.empty(10, np.float32)
    AXPBY(z, 1.0, gpuarray.to_gpu(x), 0.0, gpuarray.to_gpu(x))
    np.testing.assert_allclose(z.get(), x.ravel())
    with pytest.raises(ValueError, match="do not broadcast"):
        AXPBY(gpuarray.empty(9, np.float32), 1.0, gpuarray.to_gpu(x), 0.0, gpuarray.to_gpu(x))


def test_index_and_reverse_indexing(gpu):
    from cuplug import gpuarray

    iota = ElementwiseKernel("long long *z", "z[i] = i", "iota")
    z = gpuarray.empty((3, 4), np.int64)
    iota(z)
    np.testing.assert_array_equal(z.get(), np.arange(12).reshape(3, 4))
    rev = ElementwiseKernel("float *z, const float *x", "z[i] = x[n-1-i]", "rev")
    x = host(1001)
    out = gpuarray.empty(1001, np.float32)
    rev(out, gpuarray.to_gpu(x))
    np.testing.assert_array_equal(out.get(), x[::-1])


def test_range_and_slice(gpu):
    from cuplug import gpuarray

    fill = ElementwiseKernel("float *z, float v", "z[i] = v", "fill_v")
    z = gpuarray.zeros(20, np.float32)
    fill(z, 1.0, range=slice(2, 10, 3))
    expect = np.zeros(20, np.float32)
    expect[2:10:3] = 1
    np.testing.assert_array_equal(z.get(), expect)
    fill(z, 2.0, slice=slice(-4, None))
    expect[-4:] = 2
    np.testing.assert_array_equal(z.get(), expect)
    fill(z, 3.0, range=slice(19, 14, -2))
    expect[19:14:-2] = 3
    np.testing.assert_array_equal(z.get(), expect)


def test_stream_and_dtypes(gpu):
    import cuplug.driver as drv
    from cuplug import gpuarray

    k = ElementwiseKernel(
        "pycuda::complex<double> *z, const __half *h, int k",
        "z[i] = cuda::std::complex<double>(__half2float(h[i]), k)",
        "mix",
    )
    h = np.linspace(0, 1, 300).astype(np.float16)
    z = gpuarray.empty(300, np.complex128)
    s = drv.Stream()
    k(z, gpuarray.to_gpu(h), 7, stream=s)
    s.synchronize()
    np.testing.assert_allclose(z.get(), h.astype(np.float64) + 7j)
    with pytest.raises(TypeError):
        k(gpuarray.empty(300, np.complex64), gpuarray.to_gpu(h), 7)  # declared complex128


def test_compile_error_on_first_call_shows_the_generated_line(gpu):
    from cuplug import gpuarray
    from cuplug.compiler import CompileError

    bad = ElementwiseKernel("float *z", "z[i] = undefined_name * 2", "bad")
    with pytest.raises(CompileError) as info:
        bad(gpuarray.empty(4, np.float32))
    assert any(
        line.startswith(">") and "undefined_name" in line for line in str(info.value).splitlines()
    )


def test_prepared_function_of_get_elwise_kernel(gpu):
    from cuplug import gpuarray
    from cuplug.elementwise import get_elwise_kernel

    func = get_elwise_kernel("float *z, float a", "z[i] = a + i", "iota_a")
    z = gpuarray.empty(1000, np.float32)
    func.prepared_call((4, 1), (256, 1, 1), z.ptr, 0.5, 1000)
    np.testing.assert_allclose(z.get(), np.arange(1000) + 0.5)
