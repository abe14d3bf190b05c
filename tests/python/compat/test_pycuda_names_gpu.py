"""Results of the PyCUDA names added for issue 24 (part B), against NumPy, on a real GPU: the
elementwise get_*_kernel factories launched as PyCUDA's GPUArray launches them, the reduction
template stages, any/all in PyCUDA's form, cumath with PyCUDA's positional stream, and the
refusals that keep a kernel from reading or writing outside its arrays."""

from __future__ import annotations

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug import cumath, elementwise, gpuarray, reduction

pytestmark = pytest.mark.real_gpu

N = 1000
F32 = np.dtype(np.float32)


def _launch(func, *args, n=N):
    grid, block = gpuarray.splay(n)
    func.prepared_call(grid, block, *args, n)
    drv.Context.synchronize()


def _g(a):
    return gpuarray.to_gpu(np.ascontiguousarray(a))


@pytest.fixture
def xy(gpu_ctx):
    rng = np.random.default_rng(24)
    x = rng.uniform(0.5, 2.0, N).astype(np.float32)
    y = rng.uniform(0.5, 2.0, N).astype(np.float32)
    return x, y


def test_arithmetic_factories(xy):
    x, y = xy
    gx, gy, gz = _g(x), _g(y), gpuarray.empty(N, np.float32)
    _launch(elementwise.get_axpbyz_kernel(F32, F32, F32), np.float32(2), gx.gpudata,
            np.float32(3), gy.gpudata, gz.gpudata)  # fmt: skip
    np.testing.assert_allclose(gz.get(), 2 * x + 3 * y, rtol=1e-6)
    _launch(elementwise.get_axpbz_kernel(F32, F32), np.float32(2), gx.gpudata, np.float32(1),
            gz.gpudata)  # fmt: skip
    np.testing.assert_allclose(gz.get(), 2 * x + 1, rtol=1e-6)
    _launch(elementwise.get_binary_op_kernel(F32, F32, F32, "/"), gx.gpudata, gy.gpudata,
            gz.gpudata)  # fmt: skip
    np.testing.assert_allclose(gz.get(), x / y, rtol=1e-6)
    _launch(elementwise.get_rdivide_elwise_kernel(F32, F32), gx.gpudata, np.float32(3),
            gz.gpudata)  # fmt: skip
    np.testing.assert_allclose(gz.get(), 3 / x, rtol=1e-6)
    _launch(elementwise.get_binary_minmax_kernel("max", F32, F32, F32, False), gx.gpudata,
            gy.gpudata, gz.gpudata)  # fmt: skip
    np.testing.assert_array_equal(gz.get(), np.maximum(x, y))
    _launch(elementwise.get_scalar_op_kernel(F32, F32, F32, "-"), gx.gpudata, np.float32(1),
            gz.gpudata)  # fmt: skip
    np.testing.assert_allclose(gz.get(), x - 1, rtol=1e-6)
    _launch(elementwise.get_pow_array_kernel(F32, F32, F32, True, True), gx.gpudata,
            gy.gpudata, gz.gpudata)  # fmt: skip
    np.testing.assert_allclose(gz.get(), x**y, rtol=1e-5)
    _launch(elementwise.get_unary_func_kernel("sqrtf", F32), gx.gpudata, gz.gpudata)
    np.testing.assert_allclose(gz.get(), np.sqrt(x), rtol=1e-6)
    _launch(elementwise.get_fmod_kernel(), gx.gpudata, gy.gpudata, gz.gpudata)
    np.testing.assert_allclose(gz.get(), np.fmod(x, y), rtol=1e-6)
    gi, gf = gpuarray.empty(N, np.float32), gpuarray.empty(N, np.float32)
    _launch(elementwise.get_modf_kernel(), gx.gpudata, gi.gpudata, gf.gpudata)
    np.testing.assert_allclose(gf.get(), np.modf(x)[0], rtol=1e-6)
    np.testing.assert_array_equal(gi.get(), np.modf(x)[1])
    _launch(elementwise.get_frexp_kernel(), gx.gpudata, gi.gpudata, gf.gpudata)
    np.testing.assert_array_equal(gi.get(), np.frexp(x)[0])
    np.testing.assert_array_equal(gf.get(), np.frexp(x)[1].astype(np.float32))
    _launch(elementwise.get_ldexp_kernel(), gi.gpudata, gf.gpudata, gz.gpudata)
    np.testing.assert_array_equal(gz.get(), x)


def test_copying_and_selecting_factories(xy):
    x, y = xy
    gx, gy = _g(x), _g(y)
    g64 = gpuarray.empty(N, np.float64)
    _launch(elementwise.get_copy_kernel(np.float64, F32), g64.gpudata, gx.gpudata)
    np.testing.assert_array_equal(g64.get(), x.astype(np.float64))
    gz = gpuarray.empty(N, np.float32)
    _launch(elementwise.get_fill_kernel(F32), np.float32(7), gz.gpudata)
    assert (gz.get() == 7).all()
    _launch(elementwise.get_reverse_kernel(F32), gx.gpudata, gz.gpudata)
    np.testing.assert_array_equal(gz.get(), x[::-1])
    _launch(elementwise.get_arange_kernel(F32), gz.gpudata, np.float32(1), np.float32(0.5))
    np.testing.assert_allclose(gz.get(), 1 + 0.5 * np.arange(N, dtype=np.float32), rtol=1e-6)
    crit = _g((x - 1).astype(np.float32))
    _launch(elementwise.get_if_positive_kernel(F32, F32), crit.gpudata, gx.gpudata,
            gy.gpudata, gz.gpudata)  # fmt: skip
    np.testing.assert_array_equal(gz.get(), np.where(x - 1 > 0, x, y))
    flags = _g((np.arange(N) % 3).astype(np.int32))
    _launch(elementwise.get_where_kernel(np.int32, F32), flags.gpudata, gx.gpudata,
            gy.gpudata, gz.gpudata)  # fmt: skip
    np.testing.assert_array_equal(gz.get(), np.where(np.arange(N) % 3 != 0, x, y))
    out = gpuarray.empty(N, np.bool_)
    _launch(elementwise.get_logical_not_kernel(np.int32, np.bool_), flags.gpudata, out.gpudata)
    np.testing.assert_array_equal(out.get(), np.arange(N) % 3 == 0)
    c = (x + 1j * y).astype(np.complex64)
    gc, gcz = _g(c), gpuarray.empty(N, np.complex64)
    _launch(elementwise.get_real_kernel(np.complex64, F32), gc.gpudata, gz.gpudata)
    np.testing.assert_array_equal(gz.get(), x)
    _launch(elementwise.get_imag_kernel(np.complex64, F32), gc.gpudata, gz.gpudata)
    np.testing.assert_array_equal(gz.get(), y)
    _launch(elementwise.get_conj_kernel(np.complex64, np.complex64), gc.gpudata, gcz.gpudata)
    np.testing.assert_array_equal(gcz.get(), np.conj(c))
    idx = _g(np.arange(N)[::-1].astype(np.int32))
    dest = gpuarray.zeros(N, np.float32)
    _launch(elementwise.get_put_kernel(F32, np.int32, 1), idx.gpudata, dest.gpudata, gx.gpudata)
    np.testing.assert_array_equal(dest.get(), x[::-1])


def test_linear_combination_with_gpu_scalars_as_gpu_scalar_mult_does(xy):
    x, y = xy
    lc_kernel, lc_texrefs = elementwise.get_linear_combination_kernel(
        ((True, F32, F32), (True, F32, F32)), F32
    )
    a, b = _g(np.array(5, np.float32)), _g(np.array(7, np.float32))
    gx, gy, gz = _g(x), _g(y), gpuarray.empty(N, np.float32)
    a.bind_to_texref_ext(lc_texrefs[0], allow_double_hack=True)
    b.bind_to_texref_ext(lc_texrefs[1], allow_double_hack=True)
    _launch(lc_kernel, gx.gpudata, gy.gpudata, gz.gpudata)
    np.testing.assert_allclose(gz.get(), 5 * x + 7 * y, rtol=1e-6)
    host, _ = elementwise.get_linear_combination_kernel(((False, F32, F32),), F32)
    _launch(host, np.float32(3), gx.gpudata, gz.gpudata)
    np.testing.assert_allclose(gz.get(), 3 * x, rtol=1e-6)


def test_a_32_bit_n_is_refused_and_nothing_is_written(gpu_ctx):
    """A kernel reading a 64-bit n that was passed as 32 bits would take garbage for its upper
    half and write far past z: the declaration is refused before anything is compiled."""
    guard = gpuarray.to_gpu(np.full(4096, 3, np.float32))
    z = gpuarray.to_gpu(np.zeros(16, np.float32))
    guard2 = gpuarray.to_gpu(np.full(4096, 3, np.float32))
    with pytest.raises(ValueError, match="64-bit unsigned"):
        elementwise.get_elwise_module("float *z, unsigned int n", "z[i] = 9", "bad_n")
    ok = elementwise.get_elwise_module("float *z, unsigned long n", "z[i] = 9", "good_n")
    func = ok.get_function("good_n")
    func.prepare("PL")
    func.prepared_call((1, 1), (32, 1, 1), z.gpudata, 16)
    drv.Context.synchronize()
    assert (z.get() == 9).all()
    assert (guard.get() == 3).all() and (guard2.get() == 3).all()


def test_a_scalar_bound_to_too_little_memory_is_refused(gpu_ctx):
    _, (texref,) = elementwise.get_linear_combination_kernel(((True, np.float64, F32),), F32)
    small = _g(np.array([1], np.float32))
    with pytest.raises(ValueError, match="needs 8 bytes"):
        small.bind_to_texref_ext(texref)
    assert texref.address is None


def test_reduction_template_two_stages_give_the_dot_product(xy):
    x, y = xy
    block = 512
    s1, _ = reduction.get_reduction_kernel_and_types(
        1, "float", block, "0", "a+b", "x[i]*y[i]", "const float *x, const float *y", name="d1"
    )
    s2, _ = reduction.get_reduction_kernel_and_types(2, "float", block, "0", "a+b", name="d2")
    seq, blocks = 2, -(-N // (block * 2))
    partial = gpuarray.empty(blocks, np.float32)
    result = gpuarray.empty(1, np.float32)
    gx, gy = _g(x), _g(y)
    s1.prepared_call((blocks, 1), (block, 1, 1), partial.gpudata, gx.gpudata, gy.gpudata, seq, N,
                     shared_size=block * 4)  # fmt: skip
    s2.prepared_call((1, 1), (block, 1, 1), result.gpudata, partial.gpudata, 1, blocks,
                     shared_size=block * 4)  # fmt: skip
    np.testing.assert_allclose(result.get()[0], np.dot(x.astype(np.float64), y), rtol=1e-5)


def test_any_all_in_pycudas_form(gpu_ctx):
    v = _g(np.array([0, 0, 3, 0], np.int32))
    assert reduction.get_any_kernel(np.int32, np.int32)(v).get() == 1
    assert reduction.get_all_kernel(np.int32, np.int32)(v).get() == 0
    assert reduction.get_all_kernel(np.float32, np.int32)(_g(np.ones(9, np.int32))).get() == 1.0


def test_cumath_with_pycudas_positional_stream_and_keywords(xy):
    x, y = xy
    s = drv.Stream()
    got = cumath.fmod(_g(x), _g(y), s)
    s.synchronize()
    np.testing.assert_allclose(got.get(), np.fmod(x, y), rtol=1e-6)
    got = cumath.ldexp(significand=_g(x), exponent=_g(np.full(N, 2, np.float32)))
    np.testing.assert_allclose(got.get(), x * 4, rtol=1e-6)
    np.testing.assert_allclose(cumath.sin(array=_g(x)).get(), np.sin(x), rtol=1e-6)


def test_profiler_start_stop_on_a_real_driver(gpu_ctx):
    drv.start_profiler()
    drv.stop_profiler()
