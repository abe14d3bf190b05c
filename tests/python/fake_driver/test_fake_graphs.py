"""The fake CUDA driver through ctypes, without cuplug: graphs, executable graphs and stream
capture (against the real driver too where one is usable: `drv`)."""

from __future__ import annotations

from support import fakecuda_objects as fo
from support.fake_driver import *  # noqa: F401,F403

NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET, NODE_HOST, NODE_GRAPH, NODE_EMPTY = range(6)


def new_graph(d):
    g = c_void_p()
    d.check("cuGraphCreate", byref(g), 0)
    return g


def nodes_of(d, g, roots=False):
    name = "cuGraphGetRootNodes" if roots else "cuGraphGetNodes"
    n = c_size_t(0)
    d.check(name, g, None, byref(n))
    out = (c_void_p * max(n.value, 1))()
    d.check(name, g, out, byref(n))
    return [out[i] for i in range(n.value)]


def node_type(d, node):
    t = c_int(-1)
    d.check("cuGraphNodeGetType", c_void_p(node), byref(t))
    return t.value


def memset_node(d, g, ctx, ptr, value, count, deps=()):
    p = fo.CUDA_MEMSET_NODE_PARAMS(ptr, count * 4, value, 4, count, 1)
    node = c_void_p()
    dep_array = (c_void_p * max(len(deps), 1))(*deps)
    d.check("cuGraphAddMemsetNode", byref(node), g, dep_array, len(deps), byref(p), ctx)
    return node


def test_a_graph_of_fills_and_copies_runs_in_order(drv, ctx):
    p, q = alloc(drv, 64), alloc(drv, 64)
    g = new_graph(drv)
    fill = memset_node(drv, g, ctx, p, 0x01020304, 16)
    copy = fc.CUDA_MEMCPY3D()
    copy.srcMemoryType, copy.srcDevice, copy.srcPitch = 2, p, 64
    copy.dstMemoryType, copy.dstDevice, copy.dstPitch = 2, q, 64
    copy.WidthInBytes, copy.Height, copy.Depth = 64, 1, 1
    node = c_void_p()
    deps = (c_void_p * 1)(fill)
    drv.check("cuGraphAddMemcpyNode", byref(node), g, deps, 1, byref(copy), ctx)
    assert [node_type(drv, n) for n in nodes_of(drv, g)] == [NODE_MEMSET, NODE_MEMCPY]
    assert nodes_of(drv, g, roots=True) == [fill.value]
    e = c_void_p()
    drv.check("cuGraphInstantiateWithFlags", byref(e), g, 0)
    drv.check("cuGraphLaunch", e, None)
    drv.check("cuCtxSynchronize", None)
    assert to_host(drv, q, 64) == bytes([4, 3, 2, 1]) * 16
    drv.check("cuGraphExecDestroy", e)
    drv.check("cuGraphDestroy", g)


def test_host_nodes_run_their_function(drv, ctx):
    calls = []
    fn = fo.HOST_FN(lambda data: calls.append(data))
    g = new_graph(drv)
    params = fo.CUDA_HOST_NODE_PARAMS(fn, 1234)
    node = c_void_p()
    drv.check("cuGraphAddHostNode", byref(node), g, None, 0, byref(params))
    e = c_void_p()
    drv.check("cuGraphInstantiateWithFlags", byref(e), g, 0)
    drv.check("cuGraphLaunch", e, None)
    drv.check("cuCtxSynchronize", None)
    assert calls == [1234]
    drv.check("cuGraphExecDestroy", e)
    drv.check("cuGraphDestroy", g)


def test_child_graphs_edges_and_clones(drv, ctx):
    p = alloc(drv, 16)
    inner = new_graph(drv)
    memset_node(drv, inner, ctx, p, 9, 4)
    g = new_graph(drv)
    a, b = c_void_p(), c_void_p()
    drv.check("cuGraphAddEmptyNode", byref(a), g, None, 0)
    drv.check("cuGraphAddEmptyNode", byref(b), g, None, 0)
    child = c_void_p()
    drv.check("cuGraphAddChildGraphNode", byref(child), g, (c_void_p * 1)(a), 1, inner)
    drv.check("cuGraphDestroy", inner)  # the node took its own copy
    drv.check("cuGraphAddDependencies", g, (c_void_p * 1)(child), (c_void_p * 1)(b), None, 1)
    assert nodes_of(drv, g, roots=True) == [a.value]
    clone = c_void_p()
    drv.check("cuGraphClone", byref(clone), g)
    assert [node_type(drv, n) for n in nodes_of(drv, clone)] == [NODE_EMPTY, NODE_EMPTY, NODE_GRAPH]
    e = c_void_p()
    drv.check("cuGraphInstantiateWithFlags", byref(e), clone, 0)
    drv.check("cuGraphLaunch", e, None)
    drv.check("cuCtxSynchronize", None)
    assert to_host(drv, p, 16) == bytes([9, 0, 0, 0]) * 4
    drv.check("cuGraphExecDestroy", e)
    for h in (g, clone):
        drv.check("cuGraphDestroy", h)


def test_exec_update_needs_the_same_topology(drv, ctx):
    p = alloc(drv, 16)
    g1, g2, g3 = new_graph(drv), new_graph(drv), new_graph(drv)
    memset_node(drv, g1, ctx, p, 1, 4)
    memset_node(drv, g2, ctx, p, 2, 4)
    n = c_void_p()
    drv.check("cuGraphAddEmptyNode", byref(n), g3, None, 0)
    drv.check("cuGraphAddEmptyNode", byref(n), g3, None, 0)
    e = c_void_p()
    drv.check("cuGraphInstantiateWithFlags", byref(e), g1, 0)
    info = fo.CUgraphExecUpdateResultInfo()
    drv.check("cuGraphExecUpdate", e, g2, byref(info))
    drv.check("cuGraphLaunch", e, None)
    drv.check("cuCtxSynchronize", None)
    assert to_host(drv, p, 16) == bytes([2, 0, 0, 0]) * 4
    assert drv.cuGraphExecUpdate(e, g3, byref(info)) == 910  # CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
    assert info.result != 0
    drv.check("cuGraphExecDestroy", e)
    for g in (g1, g2, g3):
        drv.check("cuGraphDestroy", g)


def test_stream_capture_turns_work_into_nodes(drv, ctx):
    s = c_void_p()
    drv.check("cuStreamCreate", byref(s), 0)
    p = alloc(drv, 16)
    status = c_int(-1)
    drv.check("cuStreamIsCapturing", s, byref(status))
    assert status.value == 0
    drv.check("cuStreamBeginCapture", s, 0)
    drv.check("cuStreamIsCapturing", s, byref(status))
    assert status.value == 1
    drv.check("cuMemsetD32Async", p, 5, 4, s)
    drv.check("cuMemsetD32Async", p, 6, 2, s)
    g = c_void_p()
    drv.check("cuStreamEndCapture", s, byref(g))
    assert to_host(drv, p, 16) != bytes([6, 0, 0, 0]) * 2 + bytes([5, 0, 0, 0]) * 2
    assert len(nodes_of(drv, g)) == 2 and len(nodes_of(drv, g, roots=True)) == 1
    e = c_void_p()
    drv.check("cuGraphInstantiateWithFlags", byref(e), g, 0)
    drv.check("cuGraphLaunch", e, s)
    drv.check("cuStreamSynchronize", s)
    assert to_host(drv, p, 16) == bytes([6, 0, 0, 0]) * 2 + bytes([5, 0, 0, 0]) * 2
    assert drv.cuStreamBeginCapture(None, 0) != CUDA_SUCCESS  # the legacy stream cannot
    drv.check("cuGraphExecDestroy", e)
    drv.check("cuGraphDestroy", g)
    drv.check("cuStreamDestroy", s)


def test_work_that_cannot_be_captured_invalidates_the_capture(drv, ctx):
    s = c_void_p()
    drv.check("cuStreamCreate", byref(s), 0)
    drv.check("cuStreamBeginCapture", s, 0)
    assert drv.cuStreamSynchronize(s) != CUDA_SUCCESS
    status = c_int(-1)
    drv.check("cuStreamIsCapturing", s, byref(status))
    assert status.value == 2  # CU_STREAM_CAPTURE_STATUS_INVALIDATED
    g = c_void_p(1)
    assert drv.cuStreamEndCapture(s, byref(g)) == 901  # CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    assert not g.value
    drv.check("cuStreamIsCapturing", s, byref(status))
    assert status.value == 0
    drv.check("cuStreamDestroy", s)


def test_captured_kernel_launches_and_node_parameters(drv, ctx):
    mod = load(drv, SAMPLE_PTX)
    f = function(drv, mod, b"empty")
    s = c_void_p()
    drv.check("cuStreamCreate", byref(s), 0)
    drv.check("cuStreamBeginCapture", s, 0)
    drv.check("cuLaunchKernel", f, 2, 1, 1, 32, 1, 1, 0, s, None, None)
    g = c_void_p()
    drv.check("cuStreamEndCapture", s, byref(g))
    (node,) = nodes_of(drv, g)
    assert node_type(drv, node) == NODE_KERNEL
    params = fo.CUDA_KERNEL_NODE_PARAMS()
    drv.check("cuGraphKernelNodeGetParams", c_void_p(node), byref(params))
    assert (params.gridDimX, params.blockDimX) == (2, 32)
    params.gridDimX = 4
    e = c_void_p()
    drv.check("cuGraphInstantiateWithFlags", byref(e), g, 0)
    drv.check("cuGraphExecKernelNodeSetParams", e, c_void_p(node), byref(params))
    drv.check("cuGraphLaunch", e, s)
    drv.check("cuStreamSynchronize", s)
    drv.check("cuGraphExecDestroy", e)
    drv.check("cuGraphDestroy", g)
    drv.check("cuStreamDestroy", s)
    drv.check("cuModuleUnload", mod)


def test_graph_launches_record_kernel_nodes(fake_drv, fake_ctx):
    """Recorded launches and live-object counts are the fake's own bookkeeping."""
    mod = load(fake_drv, SAMPLE_PTX)
    f = function(fake_drv, mod, b"empty")
    g = new_graph(fake_drv)
    params = fo.CUDA_KERNEL_NODE_PARAMS(f, 3, 1, 1, 64, 1, 1, 0, None, None, None, None)
    node = c_void_p()
    fake_drv.check("cuGraphAddKernelNode", byref(node), g, None, 0, byref(params))
    e = c_void_p()
    fake_drv.check("cuGraphInstantiateWithFlags", byref(e), g, 0)
    assert (fake_drv.live_objects("graph"), fake_drv.live_objects("graph_exec")) == (1, 1)
    fake_drv.clear_launches()
    fake_drv.check("cuGraphLaunch", e, None)
    launch = fake_drv.last_launch()
    assert launch.function == "empty" and launch.grid == (3, 1, 1) and launch.block == (64, 1, 1)
    fake_drv.check("cuGraphExecDestroy", e)
    fake_drv.check("cuGraphDestroy", g)
    assert (fake_drv.live_objects("graph"), fake_drv.live_objects("graph_exec")) == (0, 0)
    assert fake_drv.cuGraphDestroy(g) == CUDA_ERROR_INVALID_HANDLE
    assert "graph handle" in fake_drv.take_undefined_behaviour()[0]
