"""Issue 26, part A, as properties (hypothesis, fake driver): for arbitrary shapes, strides,
offsets, item sizes and index expressions, every construct (the constructor, views, reshape,
transpose, CAI and DLPack imports) either gives a clear error or an array every reachable byte
of which lies inside the memory it owns: [ptr + min extent, ptr + max extent) within its
allocation. Views are also checked against NumPy's answer where both succeed."""

from __future__ import annotations

import gc
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cuplug.driver as drv
from cuplug import _core
from cuplug._array import interop
from cuplug.gpuarray import GPUArray

pytestmark = pytest.mark.gpu

# Clear refusals: NumPy's and Python's error types, and cuplug's (MemoryError for what the
# fake device cannot hold; drv.Error for driver refusals).
CLEAR = (ValueError, TypeError, IndexError, BufferError, MemoryError, OverflowError, drv.Error)
SETTINGS = dict(
    # CI draws the same examples every run, so that a submission lands or not on its own merits;
    # elsewhere each run explores new ones (that is how CI's failure on transpose + reshape was
    # found: keep running these locally).
    derandomize=bool(os.environ.get("CI")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)

HUGE = [2**31, 2**32 + 1, 2**33, 2**60 + 1, 2**61, 2**62, 2**63 - 1]
DTYPES = [np.uint8, np.int16, np.float32, np.float64, np.complex128, "S3", "V5"]

extents = st.one_of(st.integers(0, 5), st.sampled_from(HUGE))
small_extents = st.integers(0, 4)
strides = st.one_of(
    st.integers(-64, 64), st.sampled_from([2**31, -(2**31), 2**62, -(2**62), 2**63 - 1, -(2**63)])
)


@pytest.fixture(scope="module")
def module_ctx(driver_mode):
    if driver_mode != "fake":
        pytest.skip("properties run on the fake driver (thousands of allocations)")
    drv.init()
    context = drv.Device(0).make_context()
    yield context
    gc.collect()
    context.pop()


def reach(shape, strides, itemsize):
    """[lo, hi) bytes from element 0, in Python integers (no wrap)."""
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return lo, hi + itemsize


def root_allocation(a):
    """(address, bytes) of the allocation an array of cuplug's own memory lies in."""
    while isinstance(a.base, _core._array.ArrayBase):
        a = a.base
    mem = a.gpudata
    assert isinstance(mem, drv.DeviceAllocation), type(mem)
    return int(mem), mem.size


def assert_inside_driver_allocation(a):
    """For foreign memory: everything reached lies in one allocation the driver knows."""
    if a.size == 0:
        return
    lo, _hi = reach(a.shape, a.strides, a.itemsize)
    start, size = drv.mem_get_address_range(a.ptr + lo)
    assert_inside(a, start, size)


def assert_inside(a, start, size):
    assert a.size == math.prod(a.shape)
    assert a.nbytes == a.size * a.itemsize
    if a.size == 0:
        return
    lo, hi = reach(a.shape, a.strides, a.itemsize)
    assert start <= a.ptr + lo and a.ptr + hi <= start + size, (
        f"shape {a.shape} strides {a.strides} at {a.ptr:#x} reaches "
        f"[{a.ptr + lo:#x}, {a.ptr + hi:#x}), outside [{start:#x}, {start + size:#x})"
    )


# {{{ the constructor


@settings(max_examples=1500, **SETTINGS)
@given(
    shape=st.lists(extents, max_size=4),
    dtype=st.sampled_from(DTYPES),
    data=st.data(),
    order=st.sampled_from(["C", "F"]),
)
def test_constructor_is_refused_or_inside_its_allocation(module_ctx, shape, dtype, data, order):
    given_strides = data.draw(
        st.none() | st.lists(strides, min_size=len(shape), max_size=len(shape))
    )
    try:
        a = GPUArray(tuple(shape), dtype, strides=given_strides, order=order)
    except CLEAR:
        itemsize = np.dtype(dtype).itemsize
        size = math.prod(shape)
        # A refusal must have a reason: too big, or strides outside the buffer.
        nonzero = math.prod(n for n in shape if n)
        fits = nonzero * itemsize < 2**63
        if given_strides is None and fits and size * itemsize < 2**20:
            pytest.fail(f"a dense array of shape {shape} ({size * itemsize} bytes) was refused")
        return
    assert a.shape == tuple(shape)
    if a.size:
        assert_inside(a, *root_allocation(a))


# }}}

# {{{ views: index expressions, reshape, transpose, swapaxes, view, raw _view

slices = st.builds(
    slice,
    st.none() | st.integers(-6, 6) | st.sampled_from([2**62, -(2**62)]),
    st.none() | st.integers(-6, 6) | st.sampled_from([2**62, -(2**62)]),
    st.none()
    | st.integers(-4, 4).filter(bool)
    | st.sampled_from([2**62, -(2**62), 2**63 - 1, -(2**63)]),
)
index_items = st.one_of(slices, st.integers(-5, 5), st.just(None), st.just(Ellipsis))
operations = st.one_of(
    st.tuples(st.just("index"), st.lists(index_items, max_size=4).map(tuple)),
    st.tuples(
        st.just("reshape"),
        st.lists(st.one_of(st.integers(-1, 6), st.sampled_from(HUGE)), min_size=1, max_size=4).map(
            tuple
        ),
    ),
    st.tuples(st.just("transpose"), st.permutations(range(4))),
    st.tuples(st.just("swapaxes"), st.tuples(st.integers(-5, 5), st.integers(-5, 5))),
    st.tuples(
        st.just("view"), st.sampled_from([np.uint8, np.int16, np.float32, np.complex128, "V3"])
    ),
    st.tuples(
        st.just("raw"),
        st.tuples(
            st.lists(extents, max_size=3).map(tuple),
            st.integers(-80, 80),
        ),
    ),
)


def apply(a, op, data):
    """The operation on a GPUArray, or on a NumPy array (None where NumPy has no such one)."""
    kind, arg = op
    if kind == "index":
        return a[arg]
    if kind == "reshape":
        return a.reshape(arg)
    if kind == "transpose":
        return a.transpose(tuple(k for k in arg if k < a.ndim))
    if kind == "swapaxes":
        return a.swapaxes(*arg)
    if isinstance(a, np.ndarray):
        return None
    if kind == "view":
        return a.view(arg)
    shape, offset = arg
    raw_strides = data.draw(st.lists(strides, min_size=len(shape), max_size=len(shape)))
    return a._view(shape, tuple(raw_strides), offset)


@settings(max_examples=1500, **SETTINGS)
@given(
    shape=st.lists(small_extents, min_size=1, max_size=3),
    dtype=st.sampled_from([np.uint8, np.float32, np.complex128]),
    ops=st.lists(operations, min_size=1, max_size=4),
    data=st.data(),
)
def test_views_are_refused_or_inside_the_allocation(module_ctx, shape, dtype, ops, data):
    a = GPUArray(tuple(shape), dtype)
    h = np.zeros(shape, dtype)
    start, size = root_allocation(a) if a.size else (0, 0)
    for op in ops:
        try:
            b = apply(a, op, data)
        except CLEAR:
            return
        if a.size == 0:
            assert b.size == 0
        else:
            if b.size and root_allocation(b) != (start, size):
                # A copy, as NumPy makes one (a reshape no view of this layout can give): the
                # result lies in memory of its own, the rest of the chain with it. A view always
                # has the parent's allocation as its root, so it is checked against that one.
                assert op[0] == "reshape", (op, "made new memory")
                assert h is None or not np.shares_memory(h, apply(h, op, data)), op
                start, size = root_allocation(b)
            assert_inside(b, start, size)
        hb = None
        if h is not None:
            try:
                hb = apply(h, op, data)
            except Exception as e:  # noqa: BLE001 - NumPy refused what cuplug took
                pytest.fail(f"{op}: cuplug gave {b.shape} {b.strides}, NumPy refused: {e!r}")
        if hb is not None:
            assert b.shape == hb.shape, (op, b.shape, hb.shape)
            if b.size > 1:
                # NumPy's strides where an axis moves (length-1 axes may differ)
                assert [s for n, s in zip(b.shape, b.strides) if n > 1] == [
                    s for n, s in zip(hb.shape, hb.strides) if n > 1
                ], (op, b.strides, hb.strides)
        a, h = b, hb


def test_a_reshape_that_copies_lies_in_memory_of_its_own(module_ctx):
    # Hypothesis found it in CI: a transposed 2x2 array flattened is a copy, as in NumPy.
    a = GPUArray((2, 2), np.uint8)
    b = a.transpose((1, 0)).reshape((-1,))
    assert root_allocation(b) != root_allocation(a)
    assert_inside(b, *root_allocation(b))


# }}}

# {{{ imports

ALLOCATION = 256


@pytest.fixture(scope="module")
def foreign(module_ctx):
    mem = drv.mem_alloc(ALLOCATION)
    yield int(mem)
    mem.free()


class CAI:
    def __init__(self, fields):
        self.__cuda_array_interface__ = fields


class Producer:
    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, max_version=None):
        return self.capsule

    def __dlpack_device__(self):
        return (2, 0)


import_layouts = dict(
    shape=st.lists(extents, max_size=3),
    offset=st.integers(-64, ALLOCATION + 64) | st.sampled_from([2**40, -(2**40)]),
    dtype=st.sampled_from([np.uint8, np.float32, np.float64]),
    data=st.data(),
)


def element_strides(data, ndim):
    return data.draw(
        st.none()
        | st.lists(
            st.integers(-40, 40) | st.sampled_from([2**40, 2**61]), min_size=ndim, max_size=ndim
        )
    )


@settings(max_examples=1200, **SETTINGS)
@given(**import_layouts)
def test_cai_imports_are_refused_or_inside_the_producers_allocation(
    foreign, shape, offset, dtype, data
):
    itemsize = np.dtype(dtype).itemsize
    el = element_strides(data, len(shape))
    fields = {
        "shape": tuple(shape),
        "typestr": np.dtype(dtype).str,
        "data": (max(foreign + offset, 0), False),
        "strides": None if el is None else tuple(s * itemsize for s in el),
        "version": 3,
    }
    try:
        a = interop.from_cuda_array_interface(CAI(fields))
    except CLEAR:
        return
    assert_inside_driver_allocation(a)


@settings(max_examples=1200, **SETTINGS)
@given(**import_layouts)
def test_dlpack_imports_are_refused_or_inside_the_producers_allocation(
    foreign, shape, offset, dtype, data
):
    itemsize = np.dtype(dtype).itemsize
    el = element_strides(data, len(shape))
    if el is None:  # C order, as int64 (a producer's own arithmetic may wrap)
        el = [(math.prod(shape[k + 1 :]) + 2**63) % 2**64 - 2**63 for k in range(len(shape))]
    code = {"u": 1, "f": 2}[np.dtype(dtype).kind]
    try:
        capsule = _core._dlpack.export_capsule(
            object(),
            max(foreign + offset, 0),
            tuple(shape),
            tuple(el),
            (code, itemsize * 8, 1),
            (2, 0),
            True,
        )
        a = interop.from_dlpack(Producer(capsule))
    except CLEAR:
        return
    assert_inside_driver_allocation(a)


# }}}
