"""The values behind test_pycuda_differences.py on a GPU: PyCUDA's test_struct_reduce (a
ReductionKernel over a registered record dtype defined in its preamble) gives NumPy's min and
max."""

from __future__ import annotations

import numpy as np
import pytest
from test_pycuda_differences import _struct_reduction

pytestmark = pytest.mark.real_gpu


@pytest.fixture(scope="module")
def gpu():
    import cuplug.driver as drv

    drv.init()
    ctx = drv.Device(0).retain_primary_context()
    ctx.push()
    yield
    drv.Context.pop()


def test_struct_reduce_as_pycudas_test(gpu):
    from cuplug.curandom import rand

    a_gpu = rand((20000,), dtype=np.float32)
    a = a_gpu.get()
    minmax = _struct_reduction()(a_gpu).get()
    assert minmax["cur_min"] == np.min(a)
    assert minmax["cur_max"] == np.max(a)
