"""Issue 26 on a real GPU, where the damage was real: freed memory, a destroyed context's memory,
a wrongly typed ReductionKernel argument and an ElementwiseKernel range past its arrays are all
refused before a kernel runs, and the memory that now holds other data keeps it."""

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug import gpuarray
from cuplug.compiler import SourceModule
from cuplug.elementwise import ElementwiseKernel
from cuplug.reduction import ReductionKernel

pytestmark = pytest.mark.real_gpu

N = 4096

SOURCE = """
extern "C" __global__ void stamp(float *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = -1.0f;
}

extern "C" __global__ void read_tex(cudaTextureObject_t tex, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(tex, i);
}
"""


@pytest.fixture
def mod(ctx):
    return SourceModule(SOURCE, no_extern_c=True)


@pytest.fixture
def kernels(mod):
    return mod.get_function("stamp"), mod.get_function("read_tex")


def launch(f, *args):
    f(*args, np.int32(N), block=(256, 1, 1), grid=(N // 256, 1))


def victim_over(freed_ptr):
    """New arrays until one takes the freed block (the pool hands it back), as in the report."""
    made = []
    for _ in range(8):
        b = gpuarray.to_gpu(np.arange(N, dtype=np.float32))
        made.append(b)
        if b.ptr == freed_ptr:
            return b, made
    return made[0], made


@pytest.mark.parametrize("how", ["call", "view", "prepared", "prepared_async", "prepared_timed"])
def test_freed_array_never_reaches_a_kernel(mod, how):
    stamp = mod.get_function("stamp")
    a = gpuarray.zeros(N, np.float32)
    arg = a[:] if how == "view" else a
    freed = a.ptr
    a.gpudata.free()
    b, _keep = victim_over(freed)
    prepared = mod.get_function("stamp").prepare("Pi")
    calls = {
        "call": lambda: launch(stamp, arg),
        "view": lambda: launch(stamp, arg),
        "prepared": lambda: prepared.prepared_call((N // 256, 1), (256, 1, 1), arg, N),
        "prepared_async": lambda: prepared.prepared_async_call(
            (N // 256, 1), (256, 1, 1), None, arg, N
        ),
        "prepared_timed": lambda: prepared.prepared_timed_call((N // 256, 1), (256, 1, 1), arg, N),
    }
    with pytest.raises(drv.LogicError, match="freed"):
        calls[how]()
    drv.Context.synchronize()
    np.testing.assert_array_equal(b.get(), np.arange(N, dtype=np.float32))


def test_array_of_a_destroyed_context_is_not_read_through_its_address(ctx, kernels):
    other = drv.Device(0).make_context()
    a = gpuarray.to_gpu(np.full(N, 5, np.float32))
    view = a[1:]
    drv.Context.pop()
    other.detach()
    b = gpuarray.to_gpu(np.arange(N, dtype=np.float32))  # may take a's old address
    stamp, _ = kernels
    for use in (a.get, view.get, lambda: a.copy().get(), lambda: launch(stamp, a)):
        with pytest.raises(drv.LogicError, match="context.*destroyed"):
            use()
    drv.Context.synchronize()
    np.testing.assert_array_equal(b.get(), np.arange(N, dtype=np.float32))


def test_reduction_kernel_refuses_a_float64_array_for_a_float_argument(ctx):
    krnl = ReductionKernel(np.float32, "0", "a+b", "in[i]", arguments="const float *in")
    with pytest.raises(TypeError, match="must be a float32 array, got float64"):
        krnl(gpuarray.to_gpu(np.arange(1000, dtype=np.float64)))
    assert krnl(gpuarray.to_gpu(np.arange(1000, dtype=np.float32))).get() == 499500


@pytest.mark.parametrize("kw", [{"range": slice(0, 1000)}, {"range": slice(1000, -1, -1)}])
def test_elementwise_range_past_the_arrays_is_refused(ctx, kw):
    k = ElementwiseKernel("float *z", "z[i] = -1", "stamp_range")
    z = gpuarray.zeros(8, np.float32)
    neighbours = [gpuarray.to_gpu(np.arange(256, dtype=np.float32)) for _ in range(4)]
    with pytest.raises(IndexError, match="out of bounds"):
        k(z, **kw)
    drv.Context.synchronize()
    for n in neighbours:
        np.testing.assert_array_equal(n.get(), np.arange(256, dtype=np.float32))
    np.testing.assert_array_equal(z.get(), np.zeros(8, np.float32))


def test_texture_over_freed_memory_is_refused(kernels):
    _, read_tex = kernels
    a = gpuarray.to_gpu(np.full(N, 3, np.float32))
    tex = drv.TextureObject(a)
    out = gpuarray.zeros(N, np.float32)
    launch(read_tex, tex, out)
    np.testing.assert_array_equal(out.get(), np.full(N, 3, np.float32))
    freed = a.ptr
    a.gpudata.free()
    b, _keep = victim_over(freed)
    out.fill(0)
    with pytest.raises(drv.LogicError, match="memory it reads was freed"):
        launch(read_tex, tex, out)
    drv.Context.synchronize()
    np.testing.assert_array_equal(out.get(), np.zeros(N, np.float32))  # nothing was read
    np.testing.assert_array_equal(b.get(), np.arange(N, dtype=np.float32))
    with pytest.raises(drv.LogicError, match="freed"):
        drv.TextureObject(a)


def test_texture_over_a_freed_cuda_array_is_refused(kernels):
    _, read_tex = kernels
    host = np.full((4, 64), 2, np.float32)
    ary = drv.np_to_array(host, "C")
    tex = drv.TextureObject(ary)
    ary.free()
    out = gpuarray.zeros(N, np.float32)
    with pytest.raises(drv.LogicError, match="Array it reads was freed"):
        launch(read_tex, tex, out)
    with pytest.raises(drv.LogicError, match="freed"):
        drv.TextureObject(ary)
    np.testing.assert_array_equal(out.get(), np.zeros(N, np.float32))
