"""Issue 26, part A: sizes and strides of GPUArrays on the fake driver. Element and byte counts
must not wrap around 64 bits (NumPy's "array is too big"), strides must keep every byte an array
reaches inside its own allocation (NumPy's "strides is incompatible ..."), null pointers and
0-byte dtypes are refused, and the odd index / view / dtype cases get clear errors. A refused
construct launches nothing (the fake records every launch)."""

from __future__ import annotations

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug.gpuarray import GPUArray, empty, ones, zeros

pytestmark = pytest.mark.gpu

TOO_BIG = "array is too big"
INCOMPATIBLE = "strides is incompatible with shape of requested array and size of buffer"
AxisError = getattr(np, "exceptions", np).AxisError


@pytest.fixture
def env(ctx, fake):
    fake.clear_launches()
    yield fake


# {{{ item 1: counts that wrap


@pytest.mark.parametrize(
    "make",
    [
        lambda: GPUArray((2**62 + 4, 4), np.uint8),  # 2**64 + 16 elements "are" 16
        lambda: GPUArray(2**62, np.float64),  # 2**65 bytes "are" 0
        lambda: GPUArray((2**31, 2**31, 2**2), np.int8),
        lambda: zeros((2**33, 2**31)),  # 2**64 elements "are" 0
        lambda: ones((2**33, 2**31), np.float32),
        lambda: empty((2**61, 2**3), np.float64),
        lambda: GPUArray((0, 2**62, 2**62), np.float32),  # empty, but NumPy refuses it too
    ],
    ids=["uint8-2**64+16", "float64-2**62", "int8-2**64", "zeros", "ones", "empty", "empty-dim"],
)
def test_counts_that_overflow_are_refused(env, make):
    with pytest.raises(ValueError, match=TOO_BIG):
        make()
    assert env.launch_count() == 0


def test_the_largest_counts_numpy_allows_still_construct_their_layout(env):
    # Wraps an existing allocation: the layout is all that is checked.
    mem = drv.mem_alloc(64)
    a = GPUArray((4, 4), np.float32, gpudata=mem)
    assert a.size == 16 and a.nbytes == 64


def test_reshape_whose_product_wraps_is_refused(env):
    a = zeros(16, np.float32)
    with pytest.raises(ValueError, match="cannot reshape array of size 16"):
        a.reshape(16, 2**60 + 1)  # 16 * (2**60 + 1) is 16 in int64
    with pytest.raises(ValueError, match="cannot reshape array of size 16"):
        a.reshape(-1, 2**62, 2**2)
    assert a.reshape(4, -1).shape == (4, 4)


def test_view_whose_shape_wraps_is_refused(env):
    a = zeros(16, np.float32)
    with pytest.raises(ValueError, match=TOO_BIG):
        a._view((16, 2**60 + 1), (4, 0), 0)


# }}}

# {{{ item 2: strides outside the array's own allocation


@pytest.mark.parametrize(
    "strides", [(4096,), (-4,), (8,), (2**62,), (-(2**62),)], ids=lambda s: str(s[0])
)
def test_strides_outside_the_own_allocation_are_refused(env, strides):
    with pytest.raises(ValueError, match=INCOMPATIBLE):
        GPUArray((4,), np.float32, strides=strides)
    assert env.launch_count() == 0


def test_strides_inside_the_own_allocation_are_accepted(env):
    a = GPUArray((2, 3), np.float32, strides=(4, 8))  # F order
    assert a.strides == (4, 8) and a._f_contiguous
    b = GPUArray((4, 1), np.float32, strides=(4, 999))  # a length-1 axis never moves
    assert b.size == 4
    c = GPUArray((4, 0), np.float32, strides=(-4, 4096))  # empty: reaches nothing
    assert c.size == 0


def test_strides_outside_a_given_allocation_are_refused(env):
    mem = drv.mem_alloc(16)
    with pytest.raises(ValueError, match=INCOMPATIBLE):
        GPUArray((4,), np.float32, gpudata=mem, strides=(8,))
    with pytest.raises(ValueError, match=INCOMPATIBLE):
        GPUArray((4,), np.float32, gpudata=mem, strides=(-4,))
    with pytest.raises(ValueError, match=INCOMPATIBLE):
        GPUArray((5,), np.float32, gpudata=mem)
    assert GPUArray((2, 2), np.float32, gpudata=mem, strides=(4, 8)).size == 4


def test_an_allocator_returning_too_little_is_refused(env):
    def allocator(nbytes):
        return drv.mem_alloc(nbytes // 2)

    with pytest.raises(ValueError, match=INCOMPATIBLE):
        GPUArray((8,), np.float32, allocator=allocator)


def test_views_stay_inside_the_parent_allocation(env):
    a = zeros(4, np.float32)
    with pytest.raises(ValueError, match=INCOMPATIBLE):
        a._view((4,), (4,), 4)  # one element past the end
    with pytest.raises(ValueError, match=INCOMPATIBLE):
        a._view((2,), (-4,), 0)  # one element before the start
    with pytest.raises(ValueError, match=INCOMPATIBLE):
        a[1:]._view((4,), (4,), 0)  # a view's view still counts against the allocation
    assert a[1:]._view((4,), (4,), -4).ptr == a.ptr


def test_views_of_foreign_memory_stay_inside_the_parent(env):
    a = GPUArray((4,), np.float32, gpudata=1 << 32)
    with pytest.raises(ValueError, match=INCOMPATIBLE):
        a._view((4,), (4,), 4)
    assert a[::-1].strides == (-4,)


# }}}

# {{{ low: null pointers, 0-byte dtypes, huge steps, axes, subarray and datetime dtypes


def _refuses_use(a):
    """Every way to reach an array's memory refuses one that has none."""
    for use in (
        a.get,
        lambda: a.set(np.zeros(a.shape, a.dtype)),
        a.copy,
        lambda: a * 2,
        lambda: a.__cuda_array_interface__,
        lambda: a[1:],
    ):
        with pytest.raises(drv.LogicError, match="no memory: its gpudata is a null pointer"):
            use()


def test_a_null_gpudata_gives_an_array_without_memory_that_refuses_use(env):
    # PyCUDA accepts gpudata=0 (and an allocator returning 0): reikna's temporary arrays are
    # made so and get their memory later. The array exists; reaching its memory is refused.
    a = GPUArray((4,), np.float32, gpudata=0)
    assert a.shape == (4,) and int(a.gpudata) == 0
    _refuses_use(a)
    assert GPUArray((0,), np.float32, gpudata=0).size == 0


def test_an_allocator_returning_null_gives_an_array_that_works_once_gpudata_is_set(env):
    # reikna.cluda.tempalloc: allocator=lambda n: 0, then its GPUArray subclass sets
    # ``self.gpudata = int(buffer) + offset``.
    class Temporary(GPUArray):
        pass

    a = Temporary((4,), np.float32, allocator=lambda nbytes: 0)
    _refuses_use(a)
    memory = drv.mem_alloc(a.nbytes)
    a.gpudata = int(memory)
    a.set(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(a.get(), np.arange(4, dtype=np.float32))
    del a
    memory.free()


@pytest.mark.parametrize("dtype", ["S0", "V0", "U0", np.dtype([])], ids=str)
def test_zero_byte_dtypes_are_refused(env, dtype):
    with pytest.raises(ValueError, match="0 bytes"):
        GPUArray((4,), dtype)


def test_view_as_a_zero_byte_dtype_is_refused(env):
    a = zeros(4, np.float32)
    with pytest.raises(ValueError, match="0 bytes"):
        a.view("V0")
    with pytest.raises(ValueError, match="0 bytes"):
        a._view((4,), (4,), 0, "S0")


def test_huge_slice_steps_give_one_element(env):
    a = zeros(16, np.float32)
    h = np.zeros(16, np.float32)
    for step in (2**62, 2**63 - 1, -(2**62), -(2**63)):
        v = a[::step]
        assert v.shape == h[::step].shape == (1,)
        assert v.ptr == a.ptr + (0 if step > 0 else 15 * 4)


def test_swapaxes_out_of_range_is_numpys_axis_error(env):
    a = zeros((2, 3), np.float32)
    with pytest.raises(AxisError, match="axis 7 is out of bounds for array of dimension 2"):
        a.swapaxes(0, 7)
    with pytest.raises(AxisError, match="axis -3 is out of bounds"):
        a.swapaxes(-3, 0)
    assert a.swapaxes(-1, 0).shape == (3, 2)


def test_subarray_dtypes_expand_into_the_shape(env):
    a = GPUArray((4,), np.dtype((np.float32, 3)))
    assert (a.shape, a.dtype, a.strides) == ((4, 3), np.float32, (12, 4))
    b = GPUArray((2, 2), np.dtype((np.float32, (2, 3))), strides=(24, 48))  # outer axes F
    assert (b.shape, b.strides) == ((2, 2, 2, 3), (24, 48, 12, 4))
    host = np.zeros(4, np.dtype((np.float32, 3)))
    assert host.shape == a.shape  # NumPy's own rule
    with pytest.raises(ValueError, match="subarray dtype"):
        a.view(np.dtype((np.float32, 3)))


def test_datetime_arrays_copy_to_and_from_the_device(env):
    host = np.array(["2026-01-01", "2027-06-30"], dtype="datetime64[D]")
    a = GPUArray(host.shape, host.dtype)
    a.set(host)
    out = a.get()
    assert out.dtype == host.dtype and out.shape == host.shape
    t = GPUArray((3,), "timedelta64[s]")
    assert t.get().dtype == np.dtype("timedelta64[s]")


# }}}
