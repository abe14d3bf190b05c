"""CUDA graphs and stream capture through cuplug: nodes, dependencies, instantiation, launches,
updates and kernel-node parameter changes, ownership and errors. Under the fake driver copies,
fills and host nodes really run and kernel nodes are recorded as launches."""

import gc
import sys

import numpy as np
import pytest

import cuplug.driver as drv

pytestmark = pytest.mark.gpu

KERNELS = """
__global__ void scale(float *x, float a, int n) { }
__global__ void other(int *y) { }
"""


@pytest.fixture
def mod(ctx):
    from cuplug.compiler import SourceModule

    return SourceModule(KERNELS)


def host_of(alloc, n, dtype=np.float32):
    out = np.zeros(n, dtype)
    drv.memcpy_dtoh(out, alloc)
    return out


def test_explicit_graph_runs_its_nodes_in_dependency_order(ctx, mod, fake):
    a = drv.mem_alloc(64)
    order = []
    g = drv.Graph()
    fill = g.add_memset_node(a, 7, 16)
    check = g.add_host_node(lambda: order.append(host_of(a, 16, np.uint32)[0]), dependencies=fill)
    k = g.add_kernel_node(
        mod.get_function("scale"),
        a,
        np.float32(2),
        np.int32(16),
        block=(16, 1, 1),
        dependencies=check,
    )
    copy = g.add_memcpy_node(a, np.arange(16, dtype=np.float32), dependencies=[k])
    assert [n.type for n in g.nodes] == [
        drv.graph_node_type.MEMSET,
        drv.graph_node_type.HOST,
        drv.graph_node_type.KERNEL,
        drv.graph_node_type.MEMCPY,
    ]
    assert g.root_nodes == [fill] and copy.graph is g
    fake.clear_launches()
    g.instantiate().launch()
    assert order == [7]  # the host node saw the fill, before the copy overwrote it
    assert np.array_equal(host_of(a, 16), np.arange(16, dtype=np.float32))
    launch = fake.last_launch()
    assert launch.function == "scale" and launch.block == (16, 1, 1)
    assert np.frombuffer(launch.params[8:12], np.float32)[0] == 2


def test_empty_child_and_added_dependencies(ctx):
    a = drv.mem_alloc(16)
    inner = drv.Graph()
    inner.add_memset_node(a, 3, 4)
    g = drv.Graph()
    first, second = g.add_empty_node(), g.add_empty_node()
    child = g.add_child_graph_node(inner, dependencies=first)
    g.add_dependencies(child, second)
    assert g.root_nodes == [first]
    assert child.type == drv.graph_node_type.GRAPH
    del inner
    gc.collect()
    g.instantiate().launch()
    assert list(host_of(a, 4, np.uint32)) == [3] * 4
    with pytest.raises(ValueError, match="pair them one to one"):
        g.add_dependencies([first, second], child)


def test_graph_objects_are_destroyed_with_their_last_reference(ctx, fake):
    graphs, execs = fake.live_objects("graph"), fake.live_objects("graph_exec")
    g = drv.Graph()
    node = g.add_empty_node()
    e = g.instantiate()
    del g
    gc.collect()
    assert fake.live_objects("graph") == graphs + 1  # the node and the exec hold it
    del node, e
    gc.collect()
    assert (fake.live_objects("graph"), fake.live_objects("graph_exec")) == (graphs, execs)


def test_host_nodes_keep_their_callable_and_report_exceptions(ctx, monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_value))
    seen = []
    g = drv.Graph()
    g.add_host_node(lambda: seen.append("ran"))

    def broken():
        raise RuntimeError("boom")

    g.add_host_node(broken)
    gc.collect()
    g.instantiate().launch()
    drv.Context.synchronize()
    assert seen == ["ran"]
    assert len(unraisable) == 1 and str(unraisable[0]) == "boom"
    with pytest.raises(TypeError, match="expected a callable"):
        g.add_host_node(42)


def test_stream_capture_records_call_and_prepared_launches(ctx, mod, fake):
    f = mod.get_function("scale")
    a = drv.mem_alloc(64)
    s = drv.Stream()
    assert not s.is_capturing
    s.begin_capture(drv.capture_mode.THREAD_LOCAL)
    assert s.is_capturing
    fake.clear_launches()
    f(a, np.float32(3), np.int32(16), block=(16, 1, 1), stream=s)
    f.prepare("Pfi")
    f.prepared_async_call((2, 1), (8, 1, 1), s, a, 4.0, 16)
    drv.memset_d32_async(a, 0, 16, s)
    g = s.end_capture()
    assert not s.is_capturing and fake.launch_count() == 0  # recorded, not run
    types = [n.type for n in g.nodes]
    assert types == [drv.graph_node_type.KERNEL] * 2 + [drv.graph_node_type.MEMSET]
    assert len(g.root_nodes) == 1  # a chain, in issue order
    e = g.instantiate()
    drv.memset_d32(a, 0xFFFFFFFF, 16)
    e.launch(s)
    assert fake.launch_count() == 2 and list(host_of(a, 16, np.uint32)) == [0] * 16
    assert fake.last_launch().grid == (2, 1, 1)


def test_capture_errors(ctx):
    s = drv.Stream()
    with pytest.raises(drv.LogicError, match="cuStreamEndCapture"):
        s.end_capture()  # not capturing
    s.begin_capture()
    with pytest.raises(drv.Error):
        s.synchronize()  # cannot be captured: the capture is invalidated
    assert s.is_capturing
    with pytest.raises(drv.Error, match="cuStreamEndCapture"):
        s.end_capture()
    assert not s.is_capturing
    with pytest.raises(TypeError):
        drv.Stream().begin_capture(99)  # a capture_mode, not an int


def test_exec_kernel_node_params_and_update(ctx, mod, fake):
    f = mod.get_function("scale")
    a, b = drv.mem_alloc(64), drv.mem_alloc(64)
    g = drv.Graph()
    node = g.add_kernel_node(f, a, np.float32(1), np.int32(16), block=(16, 1, 1), grid=(1, 1))
    e = g.instantiate()
    e.set_kernel_node_params(node, b, np.float32(5), np.int32(8), grid=(3, 1))
    e.launch()
    launch = fake.last_launch()
    assert launch.grid == (3, 1, 1) and launch.block == (16, 1, 1)
    assert np.frombuffer(launch.params[:8], np.uint64)[0] == int(b)
    e.launch()  # the Graph's own node is unchanged: a new exec still has the old arguments
    g.instantiate().launch()
    assert np.frombuffer(fake.last_launch().params[8:12], np.float32)[0] == 1
    node.set_kernel_params(a, np.float32(9), np.int32(16))
    e.update(g)
    e.launch()
    assert np.frombuffer(fake.last_launch().params[8:12], np.float32)[0] == 9
    other = drv.Graph()
    other.add_empty_node()
    with pytest.raises(drv.Error, match="topology"):
        e.update(other)


def test_captured_kernel_nodes_take_new_arguments_with_their_function(ctx, mod, fake):
    f = mod.get_function("scale")
    a = drv.mem_alloc(64)
    s = drv.Stream()
    s.begin_capture()
    f(a, np.float32(3), np.int32(16), block=(4, 1, 1), grid=(2, 1), stream=s)
    g = s.end_capture()
    (node,) = g.nodes
    e = g.instantiate()
    with pytest.raises(TypeError, match="pass function="):
        e.set_kernel_node_params(node, a, np.float32(6), np.int32(16))
    e.set_kernel_node_params(node, a, np.float32(6), np.int32(16), function=f)
    e.launch(s)
    launch = fake.last_launch()
    assert launch.grid == (2, 1, 1) and launch.block == (4, 1, 1)
    assert np.frombuffer(launch.params[8:12], np.float32)[0] == 6


def test_bad_nodes_are_refused_with_their_reason(ctx, mod):
    g, other = drv.Graph(), drv.Graph()
    foreign = other.add_empty_node()
    with pytest.raises(ValueError, match="belongs to another Graph"):
        g.add_empty_node(dependencies=foreign)
    f = mod.get_function("scale")
    with pytest.raises(ValueError, match="must specify block size"):
        g.add_kernel_node(f, drv.mem_alloc(4), np.float32(1), np.int32(1))
    with pytest.raises(TypeError, match="In / Out / InOut"):
        g.add_kernel_node(
            f, drv.Out(np.zeros(4, np.float32)), np.float32(1), np.int32(1), block=(1, 1, 1)
        )
    with pytest.raises(TypeError, match="must be a Function"):
        g.add_kernel_node(print, block=(1, 1, 1))
    with pytest.raises(ValueError, match="element_size must be 1, 2 or 4"):
        g.add_memset_node(drv.mem_alloc(16), 0, 4, element_size=3)
    with pytest.raises(ValueError, match="reaches past"):
        g.add_memset_node(drv.mem_alloc(16), 0, 8)
    with pytest.raises(ValueError, match="more than its destination"):
        g.add_memcpy_node(drv.mem_alloc(8), np.zeros(4, np.float32), size=16)
    with pytest.raises(TypeError, match="size= is needed"):
        g.add_memcpy_node(1 << 40, 1 << 41)


def test_memcpy_nodes_from_memcpy3d_and_dot_output(ctx, tmp_path):
    data = drv.pagelocked_empty((3, 4), np.float32)  # graphs copy page-locked host memory
    data[:] = np.arange(12, dtype=np.float32).reshape(3, 4)
    ary = drv.Array(drv.ArrayDescriptor(4, 3, drv.array_format.FLOAT, 1))
    up = drv.Memcpy3D()
    up.set_src_host(data)
    up.set_dst_array(ary)
    up.width_in_bytes = up.src_pitch = 16
    up.height = up.src_height = 3
    up.depth = 1
    g = drv.Graph()
    g.add_memcpy_node(up)
    del up
    gc.collect()
    g.instantiate().launch()
    out = np.zeros_like(data)
    down = drv.Memcpy2D()
    down.set_src_array(ary)
    down.set_dst_host(out)
    down.width_in_bytes = down.dst_pitch = 16
    down.height = 3
    down(aligned=True)
    assert np.array_equal(out, data)
    path = tmp_path / "g.dot"
    g.debug_dot_print(str(path))
    assert "digraph" in path.read_text()
    assert g.clone().nodes[0].type == drv.graph_node_type.MEMCPY
