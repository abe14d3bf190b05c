"""The fake CUDA driver through ctypes, without cuplug: cuLaunchKernelEx with cluster and
cooperative attributes (against the real driver too where one is usable: `drv`)."""

from __future__ import annotations

import ctypes

from support import fakecuda_objects as fo
from support.fake_driver import *  # noqa: F401,F403


def launch_ex(d, f, grid, block, attrs):
    array = (fo.CUlaunchAttribute * max(len(attrs), 1))()
    for i, (ident, values) in enumerate(attrs):
        array[i].id = ident
        ctypes.memmove(array[i].value, (c_uint * len(values))(*values), 4 * len(values))
    config = fo.CUlaunchConfig(*grid, *block, 0, None, array, len(attrs))
    return d.cuLaunchKernelEx(byref(config), f, None, None)


def test_cluster_launches_need_a_grid_of_whole_clusters(drv, ctx):
    f = function(drv, load(drv, SAMPLE_PTX), b"empty")
    cluster = fo.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    assert launch_ex(drv, f, (8, 1, 1), (32, 1, 1), [(cluster, (2, 1, 1))]) == CUDA_SUCCESS
    assert launch_ex(drv, f, (6, 1, 1), (32, 1, 1), [(cluster, (4, 1, 1))]) != CUDA_SUCCESS
    drv.check("cuCtxSynchronize", None)


def test_cooperative_launches_of_resident_grids(drv, ctx):
    f = function(drv, load(drv, SAMPLE_PTX), b"empty")
    coop = fo.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
    assert launch_ex(drv, f, (4, 1, 1), (64, 1, 1), [(coop, (1,))]) == CUDA_SUCCESS
    too_many = launch_ex(drv, f, (1 << 20, 1, 1), (1024, 1, 1), [(coop, (1,))])
    assert too_many == 720  # CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
    drv.check("cuCtxSynchronize", None)
