"""Issue 26, lifetimes (fake driver): arrays of a destroyed context refuse every use with an error
saying the context is gone; texture objects never read freed memory (refused at creation, and
refused at use once the memory they read was freed); clear errors for bad texture modes."""

import pickle

import numpy as np
import pytest
from support.hardening import one_ptr_kernel

import cuplug.driver as drv
from cuplug import gpuarray
from cuplug.elementwise import ElementwiseKernel

pytestmark = pytest.mark.gpu

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
    one_ptr = one_ptr_kernel()
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


# ---- texture objects ----------------------------------------------------------------------------


def aligned(n=256, dtype=np.float32):
    return gpuarray.to_gpu(np.arange(n, dtype=dtype))


def test_texture_over_a_freed_gpuarray_or_view_is_refused(ctx):
    a = aligned(1024)
    v = a[128:]  # 512 bytes in: still texture-aligned
    a.gpudata.free()
    for source in (a, v):
        with pytest.raises(drv.LogicError, match="freed"):
            drv.TextureObject(source)


def test_texture_refuses_use_once_its_gpuarray_memory_was_freed(ctx, fake):
    f = one_ptr_kernel()
    a = aligned(1024)
    for source in (a, a[128:]):
        tex = drv.TextureObject(source)
        f(tex, block=(1, 1, 1))  # live: goes
    texes = [drv.TextureObject(a), drv.TextureObject(a[128:])]
    a.gpudata.free()
    fake.clear_launches()
    for tex in texes:
        with pytest.raises(drv.LogicError, match="memory it reads was freed"):
            f(tex, block=(1, 1, 1))
        with pytest.raises(drv.LogicError, match="memory it reads was freed"):
            f.prepare("P").prepared_call((1, 1), (1, 1, 1), tex)
        with pytest.raises(drv.LogicError, match="memory it reads was freed"):
            int(tex)
        tex.destroy()  # still harmless
    assert fake.launch_count() == 0


def test_texture_refuses_use_once_its_allocation_was_freed(ctx, fake):
    f = one_ptr_kernel()
    mem = drv.mem_alloc(1024)
    tex = drv.TextureObject(mem, format=drv.array_format.FLOAT, size_in_bytes=1024)
    mem.free()
    fake.clear_launches()
    with pytest.raises(drv.LogicError, match="memory it reads was freed"):
        f(tex, block=(1, 1, 1))
    assert fake.launch_count() == 0


def test_texture_and_surface_refuse_use_once_their_array_was_freed(ctx, fake):
    f = one_ptr_kernel()
    desc = drv.ArrayDescriptor3D(8, 4, 0, drv.array_format.FLOAT, 1, drv.array3d_flags.SURFACE_LDST)
    ary = drv.Array(desc)
    tex, surf = drv.TextureObject(ary), drv.SurfaceObject(ary)
    f(tex, block=(1, 1, 1))
    f(surf, block=(1, 1, 1))
    ary.free()
    fake.clear_launches()
    for obj in (tex, surf):
        with pytest.raises(drv.LogicError, match="Array it reads was freed"):
            f(obj, block=(1, 1, 1))
    assert fake.launch_count() == 0


def test_texture_of_a_destroyed_context_is_refused(ctx, fake):
    f = one_ptr_kernel()
    other = drv.Device(0).make_context()
    tex = drv.TextureObject(aligned())
    drv.Context.pop()
    other.detach()
    with pytest.raises(drv.LogicError, match=GONE):
        f(tex, block=(1, 1, 1))


@pytest.mark.parametrize(
    "kw, error, match",
    [
        ({"address_mode": "wrap"}, TypeError, r"address_mode must be one of address_mode.WRAP, "),
        ({"address_mode": ("wrap", "clamp")}, TypeError, r"address_mode.BORDER, got 'wrap'"),
        ({"address_mode": 7}, ValueError, r"address_mode must be one of .* got 7"),
        ({"address_mode": 1.0}, TypeError, r"address_mode must be one of"),
        ({"filter_mode": "linear"}, TypeError, r"filter_mode must be one of filter_mode.POINT"),
    ],
)
def test_texture_modes_that_are_not_the_enum_name_the_accepted_values(ctx, kw, error, match):
    with pytest.raises(error, match=match):
        drv.TextureObject(aligned(), **kw)


def test_texture_modes_as_enums_and_ints_still_work(ctx):
    drv.TextureObject(aligned(), address_mode=drv.address_mode.WRAP)
    drv.TextureObject(aligned(), address_mode=(drv.address_mode.BORDER, 1))
    drv.TextureObject(aligned(), filter_mode=drv.filter_mode.LINEAR)
