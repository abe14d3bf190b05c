"""Launches PyCUDA cannot make, on a real GPU (Hopper or newer for clusters): blocks see their
cluster rank, a cooperative grid synchronises across all its blocks, LaunchConfig replays."""

import numpy as np
import pytest

import cuplug.driver as drv

pytestmark = pytest.mark.real_gpu

SOURCE = r"""
__global__ void cluster_ranks(unsigned *rank, unsigned *size)
{
    unsigned r, n;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    if (threadIdx.x == 0) { rank[blockIdx.x] = r; size[blockIdx.x] = n; }
}

// A grid-wide barrier by hand: only safe when every block is resident (a cooperative launch).
__global__ void rotate(unsigned *data, unsigned *out, unsigned *arrived)
{
    if (threadIdx.x == 0) {
        data[blockIdx.x] = blockIdx.x * 10;
        __threadfence();
        atomicAdd(arrived, 1u);
        while (atomicAdd(arrived, 0u) < gridDim.x) { }
        out[blockIdx.x] = data[(blockIdx.x + 1) % gridDim.x];
    }
}
"""


@pytest.fixture(scope="module")
def mod():
    drv.init()
    ctx = drv.Device(0).retain_primary_context()
    ctx.push()
    from cuplug.compiler import SourceModule

    yield SourceModule(SOURCE)
    drv.Context.pop()


def test_blocks_see_their_cluster_rank(mod):
    from cuplug import gpuarray

    if drv.Context.get_device().get_attribute(drv.device_attribute.COMPUTE_CAPABILITY_MAJOR) < 9:
        pytest.skip("thread-block clusters need compute capability 9.0")
    rank, size = gpuarray.zeros(16, np.uint32), gpuarray.zeros(16, np.uint32)
    f = mod.get_function("cluster_ranks")
    f(rank, size, block=(32, 1, 1), grid=(16, 1), cluster=(4, 1, 1))
    assert np.array_equal(rank.get(), np.arange(16) % 4) and np.all(size.get() == 4)
    cfg = drv.LaunchConfig(grid=(16, 1), block=(32, 1, 1), cluster=2)
    f(rank, size, config=cfg)
    assert np.array_equal(rank.get(), np.arange(16) % 2) and np.all(size.get() == 2)
    f.prepare("PP")
    f.prepared_call((16, 1), (32, 1, 1), rank.gpudata, size.gpudata, cluster=8)
    assert np.all(size.get() == 8)


def test_cooperative_grid_synchronises_every_block(mod):
    from cuplug import gpuarray

    blocks = drv.Context.get_device().get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
    data, out = gpuarray.zeros(blocks, np.uint32), gpuarray.zeros(blocks, np.uint32)
    arrived = gpuarray.zeros(1, np.uint32)
    mod.get_function("rotate")(
        data, out, arrived, block=(64, 1, 1), grid=(blocks, 1), cooperative=True
    )
    drv.Context.synchronize()
    assert np.array_equal(out.get(), (np.arange(blocks) + 1) % blocks * 10)


def test_too_large_cooperative_grid_is_refused_before_the_driver(mod):
    from cuplug import gpuarray

    f = mod.get_function("rotate")
    x = gpuarray.zeros(1, np.uint32)
    with pytest.raises(ValueError, match="cannot have all its blocks resident"):
        f(x, x, x, block=(1024, 1, 1), grid=(1 << 20, 1), cooperative=True)
