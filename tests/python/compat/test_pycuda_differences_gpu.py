"""The values behind test_pycuda_differences.py on a GPU: reshape's copy into the order asked
keeps NumPy's elements, and PyCUDA's test_struct_reduce (a ReductionKernel over a registered
record dtype defined in its preamble) gives NumPy's min and max."""

from __future__ import annotations

import numpy as np
import pytest
from test_pycuda_differences import _struct_reduction

from cuplug import gpuarray

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
