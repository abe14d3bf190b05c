"""Launches PyCUDA cannot make (cuLaunchKernelEx): thread-block clusters, cooperative launches,
priorities, the cluster= / cooperative= / config= keywords and LaunchConfig, and the checks made
against the device before the driver call. Under the fake driver the attributes are recorded."""

import numpy as np
import pytest

import cuplug.driver as drv

pytestmark = pytest.mark.gpu


@pytest.fixture
def kernel(ctx):
    from cuplug.compiler import SourceModule

    return SourceModule("__global__ void k(float *x, int n) { }").get_function("k")


def test_cluster_keyword_launches_with_the_cluster_attribute(kernel, fake):
    x = drv.mem_alloc(64)
    kernel(x, np.int32(4), block=(32, 1, 1), grid=(8, 2), cluster=(2, 1, 1))
    assert fake.launch_attributes() == ((2, 1, 1), 0, 0)
    assert fake.last_launch().grid == (8, 2, 1)
    kernel(x, np.int32(4), block=(32, 1, 1), grid=(8, 1), cluster=4)
    assert fake.launch_attributes()[0] == (4, 1, 1)
    kernel(x, np.int32(4), block=(32, 1, 1), grid=(8, 1))  # plain: cuLaunchKernel
    assert fake.launch_attributes() == ((0, 0, 0), 0, 0)


def test_cluster_shapes_are_checked_before_the_driver(kernel, fake):
    x = drv.mem_alloc(64)
    with pytest.raises(ValueError, match=r"grid \(6, 1, 1\) is not a multiple of cluster"):
        kernel(x, np.int32(4), block=(32, 1, 1), grid=(6, 1), cluster=(4, 1, 1))
    with pytest.raises(ValueError, match="NON_PORTABLE_CLUSTER_SIZE_ALLOWED"):
        kernel(x, np.int32(4), block=(32, 1, 1), grid=(16, 1), cluster=16)
    kernel.set_attribute(drv.function_attribute.NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
    kernel(x, np.int32(4), block=(32, 1, 1), grid=(16, 1), cluster=16)
    assert fake.launch_attributes()[0] == (16, 1, 1)
    with pytest.raises(ValueError, match="non-portable limit is 16"):
        kernel(x, np.int32(4), block=(32, 1, 1), grid=(32, 1), cluster=32)
    with pytest.raises(ValueError, match="at least 1 block"):
        kernel(x, np.int32(4), block=(32, 1, 1), cluster=0)


def test_cooperative_grids_must_fit_on_the_device(kernel, fake):
    x = drv.mem_alloc(64)
    kernel(x, np.int32(4), block=(256, 1, 1), grid=(132, 1), cooperative=True)
    assert fake.launch_attributes()[1] == 1
    with pytest.raises(ValueError, match="cannot have all its blocks resident at once"):
        kernel(x, np.int32(4), block=(1024, 1, 1), grid=(100000, 1), cooperative=True)


def test_launch_config_is_reusable_and_keywords_override_it(kernel, fake):
    x = drv.mem_alloc(64)
    cfg = drv.LaunchConfig(grid=(4, 1), block=(64, 1, 1), cluster=(2, 1, 1), priority=-1)
    assert cfg.grid == (4, 1, 1) and cfg.cluster == (2, 1, 1) and cfg.priority == -1
    kernel(x, np.int32(4), config=cfg)
    launch = fake.last_launch()
    assert (launch.grid, launch.block) == ((4, 1, 1), (64, 1, 1))
    assert fake.launch_attributes() == ((2, 1, 1), 0, -1)
    kernel(x, np.int32(4), config=cfg, grid=(8, 1), cluster=(4, 1, 1))
    assert fake.last_launch().grid == (8, 1, 1) and fake.launch_attributes()[0] == (4, 1, 1)
    with pytest.raises(ValueError, match="must specify block size"):
        kernel(x, np.int32(4), config=drv.LaunchConfig(cluster=2))
    with pytest.raises(TypeError, match="config must be a LaunchConfig"):
        kernel(x, np.int32(4), block=(1, 1, 1), config={"cluster": 2})


def test_prepared_calls_take_the_launch_attributes(kernel, fake):
    x = drv.mem_alloc(64)
    kernel.prepare("Pi")
    kernel.prepared_call((4, 1), (32, 1, 1), x, 4, cluster=(2, 1, 1))
    assert fake.launch_attributes()[0] == (2, 1, 1)
    s = drv.Stream()
    kernel.prepared_async_call((2, 1), (32, 1, 1), s, x, 4, cooperative=True, shared_size=0)
    assert fake.launch_attributes()[1] == 1 and fake.last_launch().stream == s.handle
    kernel.prepared_call((4, 1), (32, 1, 1), x, 4, config=drv.LaunchConfig(cluster=4))
    assert fake.launch_attributes()[0] == (4, 1, 1)
    with pytest.raises(TypeError, match="unknown keyword arguments"):
        kernel.prepared_call((4, 1), (32, 1, 1), x, 4, clusters=2)
