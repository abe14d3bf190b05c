"""CUDA graphs on a real GPU: captured chains of kernels replayed against NumPy, explicit graphs
of copies, kernels, fills and host nodes, child graphs, and kernel-node argument updates."""

import numpy as np
import pytest

import cuplug.driver as drv

pytestmark = pytest.mark.real_gpu

SOURCE = """
__global__ void axpb(float *x, float a, float b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + b;
}
__global__ void add(float *y, const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}
"""
N = 10000
GRID = ((N + 255) // 256, 1)


@pytest.fixture(scope="module")
def kernels(gpu):
    from cuplug.compiler import SourceModule

    mod = SourceModule(SOURCE)
    return mod.get_function("axpb"), mod.get_function("add"), mod


def test_captured_chain_of_kernels_replays_to_numpy_results(kernels):
    from cuplug import gpuarray

    axpb, add, _ = kernels
    x0 = np.random.default_rng(0).uniform(-1, 1, N).astype(np.float32)
    x, y = gpuarray.to_gpu(x0), gpuarray.zeros(N, np.float32)
    s = drv.Stream()
    s.begin_capture()
    axpb(x, np.float32(0.5), np.float32(1), np.int32(N), block=(256, 1, 1), grid=GRID, stream=s)
    add.prepare("PPi")
    add.prepared_async_call(GRID, (256, 1, 1), s, y.gpudata, x.gpudata, N)
    axpb(y, np.float32(-1), np.float32(0.25), np.int32(N), block=(256, 1, 1), grid=GRID, stream=s)
    graph = s.end_capture()
    assert len(graph.nodes) == 3
    assert np.array_equal(x.get(), x0)  # capture records, it does not run
    exec_ = graph.instantiate()
    hx, hy = x0.copy(), np.zeros(N, np.float32)
    for _ in range(5):
        exec_.launch(s)
        hx = np.float32(0.5) * hx + np.float32(1)
        hy = hy + hx
        hy = np.float32(-1) * hy + np.float32(0.25)
    s.synchronize()
    np.testing.assert_allclose(x.get(), hx, rtol=1e-6)
    np.testing.assert_allclose(y.get(), hy, rtol=1e-5, atol=1e-6)


def test_explicit_graph_of_copies_kernel_fill_and_host_node(kernels):
    axpb, _, _ = kernels
    src = drv.pagelocked_empty(N, np.float32)
    src[:] = np.arange(N, dtype=np.float32)
    dst = drv.pagelocked_zeros(N, np.float32)
    dev = drv.mem_alloc(src.nbytes)
    scratch = drv.mem_alloc(src.nbytes)
    seen = []
    g = drv.Graph()
    fill = g.add_memset_node(scratch, 0x3F800000, N)  # 1.0f
    up = g.add_memcpy_node(dev, src)
    k = g.add_kernel_node(
        axpb,
        dev,
        np.float32(3),
        np.float32(-2),
        np.int32(N),
        block=(256, 1, 1),
        grid=GRID,
        dependencies=up,
    )
    down = g.add_memcpy_node(dst, dev, dependencies=[k, fill])
    g.add_host_node(lambda: seen.append(float(dst[7])), dependencies=down)
    exec_ = g.instantiate()
    exec_.upload()
    exec_.launch()
    drv.Context.synchronize()
    assert np.array_equal(dst, 3 * np.arange(N, dtype=np.float32) - 2)
    assert seen == [19.0]
    ones = np.zeros(N, np.float32)
    drv.memcpy_dtoh(ones, scratch)
    assert np.all(ones == 1)


def test_kernel_node_arguments_change_in_the_exec_and_through_update(kernels):
    from cuplug import gpuarray

    axpb, _, _ = kernels
    x = gpuarray.zeros(N, np.float32)
    g = drv.Graph()
    node = g.add_kernel_node(
        axpb, x, np.float32(1), np.float32(1), np.int32(N), block=(256, 1, 1), grid=GRID
    )
    exec_ = g.instantiate()
    exec_.launch()
    drv.Context.synchronize()
    assert np.all(x.get() == 1)
    exec_.set_kernel_node_params(node, x, np.float32(2), np.float32(0), np.int32(N))
    exec_.launch()
    drv.Context.synchronize()
    assert np.all(x.get() == 2)
    node.set_kernel_params(x, np.float32(1), np.float32(10), np.int32(N))
    exec_.update(g)
    exec_.launch()
    drv.Context.synchronize()
    assert np.all(x.get() == 12)


def test_child_graphs_and_diamond_dependencies(kernels):
    from cuplug import gpuarray

    axpb, add, _ = kernels
    a, b = gpuarray.zeros(N, np.float32), gpuarray.zeros(N, np.float32)
    inner = drv.Graph()
    inner.add_kernel_node(
        axpb, a, np.float32(1), np.float32(2), np.int32(N), block=(256, 1, 1), grid=GRID
    )
    g = drv.Graph()
    top = g.add_child_graph_node(inner)
    left = g.add_kernel_node(
        axpb,
        b,
        np.float32(1),
        np.float32(5),
        np.int32(N),
        block=(256, 1, 1),
        grid=GRID,
        dependencies=top,
    )
    right = g.add_kernel_node(
        axpb,
        a,
        np.float32(3),
        np.float32(0),
        np.int32(N),
        block=(256, 1, 1),
        grid=GRID,
        dependencies=top,
    )
    join = g.add_empty_node(dependencies=[left, right])
    g.add_kernel_node(add, b, a, np.int32(N), block=(256, 1, 1), grid=GRID, dependencies=join)
    g.instantiate().launch()
    drv.Context.synchronize()
    assert np.all(a.get() == 6) and np.all(b.get() == 11)


def test_graph_over_textures_keeps_them_alive(kernels):
    from cuplug import gpuarray
    from cuplug.compiler import SourceModule

    f = SourceModule(
        """
__global__ void read(cudaTextureObject_t t, float *out)
{ out[threadIdx.x] = tex1Dfetch<float>(t, threadIdx.x); }"""
    ).get_function("read")
    out = gpuarray.zeros(64, np.float32)
    g = drv.Graph()
    g.add_kernel_node(
        f,
        drv.TextureObject(gpuarray.to_gpu(np.arange(64, dtype=np.float32))),
        out,
        block=(64, 1, 1),
    )
    import gc

    gc.collect()  # the texture (and its GPUArray) live as long as the graph
    g.instantiate().launch()
    drv.Context.synchronize()
    assert np.array_equal(out.get(), np.arange(64, dtype=np.float32))


def test_dropping_a_launched_graph_keeps_its_host_callables_until_they_ran(gpu):
    # A kernel that spins for ~50 ms, then a host node whose callable only the graph holds. The
    # graph and its executable graph go while the kernel still runs: the callable must still be
    # there when the host node runs (the driver frees an in-flight executable graph later).
    from cuplug.compiler import SourceModule

    spin = SourceModule(
        "__global__ void spin(long long cycles)"
        "{ long long t = clock64(); while (clock64() - t < cycles) { } }"
    ).get_function("spin")
    seen = []
    g = drv.Graph()
    k = g.add_kernel_node(spin, np.int64(100_000_000), block=(1, 1, 1))
    g.add_host_node(lambda: seen.append(sum(range(1000))), dependencies=k)
    g.instantiate().launch()
    del g, k
    drv.Context.synchronize()
    assert seen == [499500]
