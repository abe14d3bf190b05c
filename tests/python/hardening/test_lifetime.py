"""Issue 26, lifetimes (fake driver): arrays of a destroyed context refuse every use with an error
saying the context is gone."""

import pickle

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug import gpuarray
from cuplug.elementwise import ElementwiseKernel

pytestmark = pytest.mark.gpu

PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry one_ptr(.param .u64 p) { ret; }
"""

GONE = "context.*(destroyed|gone)"


@pytest.fixture
def dead(ctx):
    """(array, view, allocation) made in a context that was then detached (destroyed); the
    `ctx` fixture's context is current again."""
    other = drv.Device(0).make_context()
    a = gpuarray.to_gpu(np.arange(64, dtype=np.float32))
    mem = drv.mem_alloc(256)
    drv.Context.pop()
    other.detach()
    return a, a[1:], mem


def _uses(a, v, mem, one_ptr, double):
    stream = drv.Stream()
    prepared = one_ptr.prepare("P")
    return {
        "get": a.get,
        "view get": v.get,
        "copy": a.copy,
        "view copy": v.copy,
        "set": lambda: a.set(np.zeros(64, np.float32)),
        "fill": lambda: a.fill(1),
        "operator": lambda: a + 1,
        "view operator": lambda: v * 2,
        "sum": lambda: gpuarray.sum(a),
        "ptr": lambda: a.ptr,
        "pickle": lambda: pickle.dumps(a),
        "pickle view": lambda: pickle.dumps(v),
        "cuda array interface": lambda: a.__cuda_array_interface__,
        "dlpack": lambda: a.__dlpack__(),
        "call": lambda: one_ptr(a, block=(1, 1, 1)),
        "call view": lambda: one_ptr(v, block=(1, 1, 1)),
        "call allocation": lambda: one_ptr(mem, block=(1, 1, 1)),
        "prepared": lambda: prepared.prepared_call((1, 1), (1, 1, 1), v),
        "prepared async": lambda: prepared.prepared_async_call((1, 1), (1, 1, 1), stream, a),
        "prepared allocation": lambda: prepared.prepared_call((1, 1), (1, 1, 1), mem),
        "elementwise kernel": lambda: double(a, a),
        "elementwise range": lambda: double(a, a, range=slice(0, 4)),
    }


USES = [
    "get",
    "view get",
    "copy",
    "view copy",
    "set",
    "fill",
    "operator",
    "view operator",
    "sum",
    "ptr",
    "pickle",
    "pickle view",
    "cuda array interface",
    "dlpack",
    "call",
    "call view",
    "call allocation",
    "prepared",
    "prepared async",
    "prepared allocation",
    "elementwise kernel",
    "elementwise range",
]


@pytest.mark.parametrize("use", USES)
def test_arrays_of_a_destroyed_context_refuse_every_use(dead, fake, use):
    a, v, mem = dead
    one_ptr = drv.module_from_buffer(PTX).get_function("one_ptr")
    double = ElementwiseKernel("float *z, const float *x", "z[i] = 2 * x[i]", "double_it")
    action = _uses(a, v, mem, one_ptr, double)[use]
    fake.clear_launches()
    with pytest.raises(drv.LogicError, match=GONE):
        action()
    assert fake.launch_count() == 0


def test_arrays_of_a_live_context_still_work(ctx):
    a = gpuarray.to_gpu(np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(a[1:])).get(), np.arange(1, 8))
    assert a.__cuda_array_interface__["data"][0] == a.ptr
