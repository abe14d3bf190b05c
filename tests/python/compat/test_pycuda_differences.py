"""Where PyCUDA's own test suite found cuplug answering otherwise than PyCUDA (issue 24), under
the fake driver: transpose(axes=...), __cuda_array_interface__'s strides, reshape's layout for
an order other than the array's, and a ReductionKernel over a registered record dtype whose
struct its preamble defines (compiled by NVRTC, which needs no GPU; the fake loads it)."""

from __future__ import annotations

import numpy as np
import pytest

from cuplug import gpuarray
from cuplug.reduction import ReductionKernel
from cuplug.tools import get_or_register_dtype

pytestmark = pytest.mark.gpu


def test_transpose_takes_pycudas_axes_keyword(ctx):
    a = gpuarray.empty((2, 3, 4), np.float32)
    t = a.transpose(axes=(1, 2, 0))
    assert t.shape == (3, 4, 2) and t.strides == (16, 4, 48)
    assert a.transpose(axes=None).shape == (4, 3, 2)
    assert a.transpose((2, 0, 1)).shape == a.transpose(2, 0, 1).shape == (4, 2, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'order'"):
        a.transpose(order="C")
    with pytest.raises(TypeError, match="both positionally and as axes="):
        a.transpose((0, 1, 2), axes=(0, 1, 2))
    with pytest.raises(ValueError, match="don't match"):
        a.transpose(axes=(0, 1))


@pytest.mark.parametrize("order", ["C", "F"])
def test_cuda_array_interface_gives_the_strides_of_a_contiguous_array(ctx, order):
    a = gpuarray.empty((3, 5), np.float64, order=order)
    assert a.__cuda_array_interface__["strides"] == ((40, 8) if order == "C" else (8, 24))


def test_cuda_array_interface_of_an_empty_array_has_no_strides(ctx):
    # Its data pointer is null: CuPy takes (null, strides) for foreign memory it cannot place.
    cai = gpuarray.zeros((0, 4), np.float32).__cuda_array_interface__
    assert cai["data"] == (0, False) and cai["strides"] is None


def test_reshape_lays_the_result_out_in_the_order_asked_as_pycudas_test_reshape(ctx):
    a = gpuarray.to_gpu(np.arange(128).reshape(8, 16).astype(np.float32))
    a = a.reshape((4, 32), order="C")
    assert a.flags.c_contiguous
    f = a.reshape(4, 32, order="F")
    assert f.flags.f_contiguous and f.shape == (4, 32)
    f = f.reshape((4, 32), order="F")
    assert f.flags.f_contiguous
    c = f.reshape((4, 32))
    assert c.flags.c_contiguous
    # Where NumPy's answer already has the layout asked, it is NumPy's view.
    flat = gpuarray.empty((128,), np.float32)
    v = flat.reshape(4, 32, order="F")
    assert v.flags.f_contiguous and v.ptr == flat.ptr
    assert a.reshape(4, 32) is a


PREAMBLE = """
struct minmax_collector
{
    float cur_min;
    float cur_max;

    __device__
    minmax_collector()
    { }

    __device__
    minmax_collector(float cmin, float cmax)
    : cur_min(cmin), cur_max(cmax)
    { }

    __device__ minmax_collector(minmax_collector const &src)
    : cur_min(src.cur_min), cur_max(src.cur_max)
    { }

    __device__ minmax_collector(minmax_collector const volatile &src)
    : cur_min(src.cur_min), cur_max(src.cur_max)
    { }

    __device__ minmax_collector volatile &operator=(
        minmax_collector const &src) volatile
    {
        cur_min = src.cur_min;
        cur_max = src.cur_max;
        return *this;
    }
};

__device__
minmax_collector agg_mmc(minmax_collector a, minmax_collector b)
{
    return minmax_collector(
        fminf(a.cur_min, b.cur_min),
        fmaxf(a.cur_max, b.cur_max));
}
"""

MMC_DTYPE = np.dtype([("cur_min", np.float32), ("cur_max", np.float32)])


def _struct_reduction():
    """PyCUDA's test_struct_reduce, up to the call."""
    dtype = get_or_register_dtype("minmax_collector", MMC_DTYPE)
    return ReductionKernel(
        dtype,
        neutral="minmax_collector(10000, -10000)",
        reduce_expr="agg_mmc(a, b)",
        map_expr="minmax_collector(x[i], x[i])",
        arguments="float *x",
        preamble=PREAMBLE,
    )


def test_a_reduction_over_a_record_dtype_defined_in_its_preamble_compiles(ctx):
    red = _struct_reduction()  # compiles (NVRTC) and loads here, as PyCUDA's does
    source = red.source
    assert source.index("struct minmax_collector") < source.index("typedef minmax_collector")
    out = red(gpuarray.empty((20000,), np.float32))
    assert out.dtype == MMC_DTYPE and out.shape == ()


def test_an_array_is_not_an_iterable_as_pycudas_but_iterates_by_index(ctx):
    # PyCUDA's GPUArray has no __iter__: reikna's tempalloc.extract_dependencies tells an array
    # from a list of arrays with isinstance(x, Iterable), and with an __iter__ it walked into
    # the array's elements down to a 0-d one ("iteration over a 0-d array").
    import collections.abc

    a = gpuarray.to_gpu(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert not isinstance(a, collections.abc.Iterable)
    rows = list(a)  # the sequence protocol: a[0], a[1], then IndexError ends it
    assert [r.shape for r in rows] == [(3,), (3,)]
    np.testing.assert_array_equal(rows[1].get(), [3, 4, 5])
    assert list(gpuarray.to_gpu(np.float32(1))) == []  # a 0-d array: nothing to step through
