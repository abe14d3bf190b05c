"""Issue 26, kernel arguments (fake driver): freed memory never reaches a kernel through
Function.__call__, prepared calls or graph nodes; a DeviceAllocation of another device is refused
and mixed contexts of one device say so; a null __cuda_array_interface__ pointer is refused;
ElementwiseKernel ranges stay inside every vector; ReductionKernel checks its arguments' dtypes;
clear errors for bad arguments= and CUDA_DEVICE."""

import numpy as np
import pytest
from support.hardening import one_ptr_kernel

import cuplug.driver as drv
from cuplug import gpuarray, tools
from cuplug.elementwise import ElementwiseKernel
from cuplug.reduction import ReductionKernel

pytestmark = pytest.mark.gpu


def _freed_arrays():
    """(name, make) pairs: each make() returns an array whose memory was freed."""

    def own_pool():  # the default allocator: the block goes back to the pool for reuse
        a = gpuarray.zeros(64, np.float32)
        a.gpudata.free()
        return a

    def own_mem_alloc():
        a = gpuarray.zeros(64, np.float32, allocator=drv.mem_alloc)
        a.gpudata.free()
        return a

    def view():
        a = gpuarray.zeros(64, np.float32)
        v = a[8:]
        a.gpudata.free()
        return v

    return [("pool", own_pool), ("mem_alloc", own_mem_alloc), ("view", view)]


FREED = _freed_arrays()


@pytest.mark.parametrize("make", [m for _, m in FREED], ids=[n for n, _ in FREED])
def test_call_refuses_a_freed_array(one_ptr, fake, make):
    a = make()
    fake.clear_launches()
    with pytest.raises(drv.LogicError, match="freed"):
        one_ptr(a, block=(1, 1, 1))
    assert fake.launch_count() == 0


@pytest.mark.parametrize("make", [m for _, m in FREED], ids=[n for n, _ in FREED])
def test_prepared_calls_refuse_a_freed_array(one_ptr, fake, make):
    a = make()
    f = one_ptr.prepare("P")
    fake.clear_launches()
    stream = drv.Stream()
    for call in (
        lambda: f.prepared_call((1, 1), (1, 1, 1), a),
        lambda: f.prepared_async_call((1, 1), (1, 1, 1), stream, a),
        lambda: f.prepared_timed_call((1, 1), (1, 1, 1), a),
    ):
        with pytest.raises(drv.LogicError, match="freed"):
            call()
    assert fake.launch_count() == 0


def test_graph_kernel_nodes_refuse_a_freed_array(one_ptr, fake):
    a = FREED[2][1]()
    g = drv.Graph()
    with pytest.raises(drv.LogicError, match="freed"):
        g.add_kernel_node(one_ptr, a, block=(1, 1, 1))
    with pytest.raises(drv.LogicError, match="freed"):
        g.add_kernel_node(one_ptr.prepare("P"), a, block=(1, 1, 1))
    assert g.nodes == [] or len(g.nodes) == 0


def test_live_arrays_and_views_still_pass_their_address(one_ptr, fake):
    import struct

    a = gpuarray.zeros(64, np.float32)
    for arg, ptr in ((a, a.ptr), (a[8:], a.ptr + 32)):
        one_ptr(arg, block=(1, 1, 1))
        assert fake.last_launch().params == struct.pack("@P", ptr)
        one_ptr.prepare("P").prepared_call((1, 1), (1, 1, 1), arg)
        assert fake.last_launch().params == struct.pack("@P", ptr)


# ---- devices and foreign pointers ---------------------------------------------------------------


@pytest.fixture
def two():
    drv.init()
    if drv.Device.count() < 2:
        pytest.skip("needs two devices (the fake driver has two)")
    return drv.Device(0).retain_primary_context(), drv.Device(1).retain_primary_context()


def test_call_refuses_a_device_allocation_of_another_device(two, fake):
    c0, c1 = two
    with c0:
        mem = drv.mem_alloc(256)
    with c1:
        f = one_ptr_kernel()
        fake.clear_launches()
        with pytest.raises(ValueError, match=r"argument '#0' is on device 0 .*device 1"):
            f(mem, block=(1, 1, 1))
        assert fake.launch_count() == 0
        f(drv.mem_alloc(256), block=(1, 1, 1))  # its own device's memory still goes
        assert fake.launch_count() == 1


def test_mixed_contexts_of_one_device_say_so(ctx):
    a = gpuarray.zeros(4, np.float32)
    other = drv.Device(0).make_context()
    try:
        with pytest.raises(ValueError) as e:
            a * 2
        message = str(e.value)
        assert "another context of the same device" in message
        assert "current context is on device 0" not in message
    finally:
        drv.Context.pop()
        other.detach()


class NullInterface:
    def __init__(self, shape):
        self.__cuda_array_interface__ = {
            "data": (0, False),
            "shape": shape,
            "typestr": "<f4",
            "version": 3,
        }


def test_call_refuses_a_null_cuda_array_interface_pointer(one_ptr, fake):
    fake.clear_launches()
    with pytest.raises(ValueError, match=r"data pointer 0 \(null\) for shape \(4,\)"):
        one_ptr(NullInterface((4,)), block=(1, 1, 1))
    assert fake.launch_count() == 0
    one_ptr(NullInterface((0, 4)), block=(1, 1, 1))  # empty: no memory, allowed
    assert fake.launch_count() == 1


# ---- ElementwiseKernel range= and slice= --------------------------------------------------------


@pytest.fixture
def axpy(ctx):
    return ElementwiseKernel("float *z, const float *x", "z[i] = 2 * x[i]", "axpy_range")


@pytest.mark.parametrize(
    "kw, bad",
    [
        ({"range": slice(0, 1000)}, "index 999 is out of bounds for axis 0 with size 8"),
        ({"range": slice(0, 9)}, "index 8 is out of bounds"),
        ({"range": slice(-2, 4)}, "index -2 is out of bounds"),
        ({"range": slice(8, 0, -1)}, "index 8 is out of bounds"),
        ({"range": slice(7, -3, -1)}, "index -2 is out of bounds"),
        ({"range": slice(0, 1000, 100)}, "index 900 is out of bounds"),
    ],
)
def test_range_past_a_vector_is_refused(axpy, fake, kw, bad):
    z, x = gpuarray.zeros(8, np.float32), gpuarray.zeros(8, np.float32)
    fake.clear_launches()
    with pytest.raises(IndexError, match=bad):
        axpy(z, x, **kw)
    assert fake.launch_count() == 0


def test_slice_is_checked_against_every_vector(axpy, fake):
    z, x = gpuarray.zeros(16, np.float32), gpuarray.zeros(8, np.float32)
    fake.clear_launches()
    # slice= clamps to the first vector (16), which still runs past x (8).
    with pytest.raises(IndexError, match=r"argument 'x' has 8 elements: index 15"):
        axpy(z, x, slice=slice(0, 1000))
    assert fake.launch_count() == 0


@pytest.mark.parametrize(
    "kw",
    [
        {"range": slice(0, 8)},
        {"range": slice(7, -1, -1)},
        {"range": slice(1, 8, 3)},
        {"slice": slice(None, None, -1)},
        {"slice": slice(-3, None)},
    ],
)
def test_ranges_inside_the_vectors_launch(axpy, fake, kw):
    z, x = gpuarray.zeros(8, np.float32), gpuarray.zeros(8, np.float32)
    fake.clear_launches()
    axpy(z, x, **kw)
    assert fake.launch_count() == 1


# ---- ReductionKernel dtypes, arguments= ---------------------------------------------------------


def test_reduction_kernel_refuses_another_dtype(ctx, fake):
    krnl = ReductionKernel(np.float32, "0", "a+b", "in[i]", arguments="const float *in")
    x = gpuarray.zeros(1000, np.float64)
    fake.clear_launches()
    with pytest.raises(TypeError, match=r"argument 'in' must be a float32 array, got float64"):
        krnl(x)
    assert fake.launch_count() == 0
    krnl(gpuarray.zeros(1000, np.float32))
    assert fake.launch_count() >= 1


def test_reduction_kernel_refuses_a_freed_view(ctx, fake):
    krnl = ReductionKernel(np.float32, "0", "a+b", "in[i]", arguments="const float *in")
    a = gpuarray.zeros(1000, np.float32)
    v = a[10:]
    a.gpudata.free()
    fake.clear_launches()
    with pytest.raises(drv.LogicError, match="freed"):
        krnl(v)
    assert fake.launch_count() == 0


@pytest.mark.parametrize(
    "make",
    [
        lambda: ElementwiseKernel(123, "z[i] = 0"),
        lambda: ReductionKernel(np.float32, "0", "a+b", arguments=123),
    ],
    ids=["elementwise", "reduction"],
)
def test_arguments_that_are_not_a_declaration_are_a_clear_type_error(make):
    with pytest.raises(TypeError, match=r"arguments must be a C declaration string .*got int"):
        make()


# ---- CUDA_DEVICE --------------------------------------------------------------------------------


def test_cuda_device_out_of_range_names_the_variable_and_the_count(monkeypatch):
    drv.init()
    monkeypatch.setenv("CUDA_DEVICE", "99")
    with pytest.raises(ValueError, match=r"CUDA device number 99 \(from CUDA_DEVICE.*has \d+ CUDA"):
        tools.make_default_context()
    monkeypatch.setenv("CUDA_DEVICE", "-1")
    with pytest.raises(ValueError, match="CUDA device number -1"):
        tools.make_default_context()
