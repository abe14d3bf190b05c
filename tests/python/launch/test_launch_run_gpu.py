"""Kernel launch on a real GPU: a kernel called with InOut and through prepare / prepared_call
changes the data as it should. The argument packing it relies on is test_launch.py's, checked
against the bytes the fake driver records."""

import numpy as np
import pytest

import cuplug.driver as drv

pytestmark = [pytest.mark.gpu, pytest.mark.real_gpu]


def test_double_kernel_runs(ctx):
    from cuplug.compiler import SourceModule

    mod = SourceModule("""
    __global__ void twice(float *a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) a[i] *= 2;
    }""")
    f = mod.get_function("twice")
    data = np.arange(1000, dtype=np.float32)
    f(drv.InOut(data), np.int32(1000), block=(256, 1, 1), grid=(4, 1))
    assert np.array_equal(data, np.arange(1000, dtype=np.float32) * 2)
    dev = drv.to_device(data)
    f.prepare("Pi").prepared_call((4, 1), (256, 1, 1), dev, 1000)
    assert np.array_equal(
        drv.from_device(dev, (1000,), np.float32), np.arange(1000, dtype=np.float32) * 4
    )
