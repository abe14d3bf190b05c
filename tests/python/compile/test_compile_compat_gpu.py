"""PyCUDA's device headers on a real GPU: a kernel using pycuda::complex and pycuda-helpers.hpp,
compiled under the default NVRTC backend, computes what NumPy computes. That it compiles is
test_compile_compat.py's."""

import pytest
from test_compile_compat import PYCUDA_COMPLEX_KERNEL

pytestmark = pytest.mark.real_gpu


@pytest.mark.gpu
def test_pycuda_complex_arithmetic_matches_numpy(ctx):
    import numpy as np

    import cuplug.driver as drv
    from cuplug.compiler import SourceModule

    rng = np.random.default_rng(3)
    n = 1000
    z = (rng.random(n) + 1j * rng.random(n)).astype(np.complex64)
    c = (rng.random(n) - 0.5 + 1j * (rng.random(n) - 0.5)).astype(np.complex64)
    out_z, out_n = z.copy(), np.empty(n, np.float32)
    step = SourceModule(PYCUDA_COMPLEX_KERNEL).get_function("step")
    step(
        drv.InOut(out_z),
        drv.In(c),
        drv.Out(out_n),
        np.int32(3),
        np.int32(n),
        block=(256, 1, 1),
        grid=(4, 1),
    )
    v = z.astype(np.complex128) ** 3 + c
    want_z = v + np.conj(v) * 1j + 1
    want_n = np.abs(v) ** 2 + np.abs(v) + np.angle(v) + v.real + v.imag
    np.testing.assert_allclose(out_z, want_z, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(out_n, want_n, rtol=2e-5, atol=2e-5)
