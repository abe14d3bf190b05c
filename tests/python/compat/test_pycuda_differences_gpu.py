"""The values behind test_pycuda_differences.py on a GPU: reshape's copy into the order asked
keeps NumPy's elements, and PyCUDA's test_struct_reduce (a ReductionKernel over a registered
record dtype defined in its preamble) gives NumPy's min and max."""

from __future__ import annotations

import numpy as np
import pytest
from test_pycuda_differences import _struct_reduction

import cuplug.driver as drv
from cuplug import gpuarray
from cuplug.compiler import SourceModule

pytestmark = pytest.mark.real_gpu


def test_reshape_in_the_other_order_keeps_numpys_elements(gpu_ctx):
    host = np.arange(128, dtype=np.float32).reshape(4, 32)
    a = gpuarray.to_gpu(host)
    f = a.reshape(4, 32, order="F")
    assert f.flags.f_contiguous
    np.testing.assert_array_equal(f.get(), host.reshape(4, 32, order="F"))
    g = a.reshape(8, 16, order="F")
    assert g.flags.f_contiguous
    np.testing.assert_array_equal(g.get(), host.reshape(8, 16, order="F"))
    c = gpuarray.to_gpu(np.asfortranarray(host)).reshape(2, 64)
    assert c.flags.c_contiguous
    np.testing.assert_array_equal(c.get(), host.reshape(2, 64))


def test_struct_reduce_as_pycudas_test(gpu_ctx):
    from cuplug.curandom import rand

    a_gpu = rand((20000,), dtype=np.float32)
    a = a_gpu.get()
    minmax = _struct_reduction()(a_gpu).get()
    assert minmax["cur_min"] == np.min(a)
    assert minmax["cur_max"] == np.max(a)


def test_two_modules_of_one_source_keep_their_own_constant_memory(gpu_ctx):
    # reikna's test_constant_memory: two programs of one source, different __constant__ arrays,
    # both run afterwards. cuplug once handed the second SourceModule the first one's module.
    source = """
    __constant__ float k[4];
    __global__ void scale(float *x) { x[threadIdx.x] = k[threadIdx.x]; }
    """
    first, second = SourceModule(source), SourceModule(source)
    for module, value in ((first, 1.0), (second, 2.0)):
        address, size = module.get_global("k")
        assert size == 16
        drv.memcpy_htod(address, np.full(4, value, np.float32))
    for module, value in ((first, 1.0), (second, 2.0)):
        out = gpuarray.zeros(4, np.float32)
        module.get_function("scale")(out, block=(4, 1, 1), grid=(1, 1))
        np.testing.assert_array_equal(out.get(), np.full(4, value, np.float32))
