"""Views of GPUArrays (indexing, reshape, transpose, view, squeeze) have NumPy's shape, strides
and element-0 offset (no device: arrays wrap made-up addresses)."""

from __future__ import annotations

import numpy as np
import pytest

from cuplug.gpuarray import GPUArray

BASE = 1 << 32


def pair(shape, dtype=np.float32, order="C"):
    h = np.zeros(shape, dtype, order=order)
    g = GPUArray(shape, dtype, gpudata=BASE, strides=h.strides)
    return h, g


def same(h, g, host_base):
    assert g.shape == h.shape
    assert g.dtype == h.dtype
    if h.size:
        assert g.strides == h.strides, (g.strides, h.strides)
        offset = h.__array_interface__["data"][0] - host_base.__array_interface__["data"][0]
        assert g.ptr == BASE + offset
    assert g._c_contiguous == h.flags.c_contiguous
    assert g._f_contiguous == h.flags.f_contiguous


INDICES = [
    0,
    -1,
    (1, 2),
    (slice(None), 1),
    slice(1, None, 2),
    slice(None, None, -1),
    slice(-2, 0, -1),
    (Ellipsis, 1),
    (None, 1),
    (1, None, slice(None, None, -2)),
    (slice(None), None, Ellipsis),
    (Ellipsis,),
    (),
    slice(5, 2),
    (slice(0, 0),),
    (np.int64(1), slice(None)),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
@pytest.mark.parametrize("order", ["C", "F"])
def test_indexing_matches_numpy(index, order):
    h, g = pair((4, 5, 6), order=order)
    same(h[index], g[index], h)


def test_chained_views_match_numpy():
    h, g = pair((6, 7, 8))
    ops = [
        lambda a: a[::-1],
        lambda a: a.transpose(2, 0, 1),
        lambda a: a[1:, ::2],
        lambda a: a[..., ::-3],
        lambda a: a[None],
        lambda a: a.T,
        lambda a: a.squeeze(),
        lambda a: a[:, 1],
    ]
    hv, gv = h, g
    for op in ops:
        hv, gv = op(hv), op(gv)
        same(hv, gv, h)
    assert gv.base is not None


def test_index_errors():
    _, g = pair((3, 4))
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 4"):
        g[0, 4]
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 3"):
        g[-4]
    with pytest.raises(IndexError, match="too many indices"):
        g[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        g[..., ...]
    with pytest.raises(IndexError, match="take"):
        g[[0, 1]]
    with pytest.raises(IndexError, match="boolean"):
        g[True]


@pytest.mark.parametrize(
    "old, new, order",
    [
        ((4, 6), (24,), "C"),
        ((4, 6), (2, 12), "C"),
        ((4, 6), (-1, 3), "C"),
        ((2, 3, 4), (6, 4), "C"),
        ((2, 3, 4), (4, 3, 2), "F"),
        ((2, 1, 4), (8,), "C"),
        ((5,), (1, 5, 1), "C"),
        ((0, 3), (3, 0), "C"),
    ],
)
def test_reshape_views_match_numpy(old, new, order):
    h, g = pair(old, order=order)
    hv = h.reshape(new, order=order)
    assert np.shares_memory(hv, h) or h.size == 0
    same(hv, g.reshape(new, order=order), h)


def test_reshape_of_non_contiguous_views_without_copy():
    h, g = pair((4, 6, 2))
    hv = h[::2]  # (2, 6, 2): the last two dims still merge
    gv = g[::2]
    assert np.shares_memory(hv.reshape(2, 12), h)
    same(hv.reshape(2, 12), gv.reshape(2, 12), h)
    same(h.T.reshape(2, 24, order="F"), g.T.reshape(2, 24, order="F"), h)


def test_reshape_errors_and_identity():
    _, g = pair((4, 6))
    assert g.reshape(4, 6) is g
    assert g.reshape((4, 6)) is g
    with pytest.raises(ValueError, match="cannot reshape array of size 24 into shape"):
        g.reshape(5, 5)
    with pytest.raises(ValueError, match="only specify one unknown"):
        g.reshape(-1, -1)
    with pytest.raises(TypeError, match="integers"):
        g.reshape(2.0, 12)
    assert g.ravel().shape == (24,)


def test_view_changes_the_last_axis_like_numpy():
    h, g = pair((4, 6), np.float32)
    same(h.view(np.int32), g.view(np.int32), h)
    same(h.view(np.uint8), g.view(np.uint8), h)
    same(h.view(np.complex64), g.view(np.complex64), h)
    same(h.view(np.float16), g.view(np.float16), h)
    with pytest.raises(ValueError, match="divisor"):
        g[:, :5].view(np.float64)
    with pytest.raises(ValueError):
        g[:, ::2].view(np.float64)
    _, z = pair((), np.float32)
    with pytest.raises(ValueError, match="0d"):
        z.view(np.float64)


def test_transpose_forms():
    h, g = pair((2, 3, 4))
    same(h.transpose(), g.transpose(), h)
    same(h.transpose((1, 0, 2)), g.transpose((1, 0, 2)), h)
    same(h.transpose(2, 1, 0), g.transpose(2, 1, 0), h)
    same(h.transpose(-1, 0, 1), g.transpose(-1, 0, 1), h)
    same(np.swapaxes(h, 0, 2), g.swapaxes(0, 2), h)
    with pytest.raises(ValueError, match="don't match"):
        g.transpose(0, 1)


def test_squeeze_forms():
    h, g = pair((1, 3, 1, 4))
    same(h.squeeze(), g.squeeze(), h)
    same(h.squeeze(0), g.squeeze(0), h)
    same(h.squeeze((0, 2)), g.squeeze((0, 2)), h)
    with pytest.raises(ValueError, match="size not equal to one"):
        g.squeeze(1)


def test_attributes_and_flags():
    h, g = pair((3, 4), np.float64)
    assert (g.size, g.mem_size, g.nbytes, g.itemsize, g.ndim) == (12, 12, 96, 8, 2)
    assert g.flags.c_contiguous and not g.flags.f_contiguous and g.flags.forc
    assert g.T.flags.f_contiguous and g.T.flags.forc
    assert not g[:, ::2].flags.forc
    assert len(g) == 3
    with pytest.raises(TypeError, match="unsized"):
        len(g[0, 0])
    assert g.gpudata == BASE and g[1].gpudata == BASE + 32
    assert g[1].base is g
    with pytest.raises(TypeError, match="unhashable"):
        hash(g)
    # An empty array has no element 0 to point at: its pointer is 0 whatever memory it was handed
    # (which it keeps, as PyCUDA keeps it), and one cuplug makes allocates nothing.
    _, e = pair((0, 4))
    assert (e.size, e.nbytes, e.ptr, len(e)) == (0, 0, 0, 0)
    assert e.gpudata == BASE
    assert GPUArray((0, 4), np.float32).gpudata is None


def test_constructor_arguments():
    g = GPUArray(np.int64(5), np.float32, gpudata=BASE)
    assert g.shape == (5,)
    g = GPUArray(np.array([2, 3]), np.float32, gpudata=BASE)
    assert g.shape == (2, 3)
    g = GPUArray([2, 3], "f4", gpudata=BASE, order="F")
    assert g.strides == (4, 8)
    g = GPUArray((2, 0, 3), np.float64, gpudata=BASE)
    assert g.size == 0 and g.nbytes == 0 and g.ptr == 0
    with pytest.raises(ValueError, match="order must be 'C' or 'F'"):
        GPUArray((2,), np.float32, gpudata=BASE, order="K")
    with pytest.raises(ValueError, match="negative dimensions"):
        GPUArray((2, -1), np.float32, gpudata=BASE)
    with pytest.raises(TypeError, match="shape entries must be integers"):
        GPUArray((2.5,), np.float32, gpudata=BASE)
    with pytest.raises(ValueError, match="strides has 1 entries for 2 dimensions"):
        GPUArray((2, 2), np.float32, gpudata=BASE, strides=(4,))
    with pytest.raises(TypeError):
        GPUArray((2,), "not a dtype", gpudata=BASE)
