"""NumPy's functions on GPUArrays (NEP 13 / NEP 18) against the fake driver: which routine and
kernel each NumPy call reaches, the result's type, shape and dtype, and the TypeErrors for what is
not implemented or would copy between host and device behind the caller's back. The values are
checked on a GPU by test_numpy_protocols_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

from cuplug import cumath
from cuplug._array import numpy_protocols
from cuplug.gpuarray import GPUArray

pytestmark = pytest.mark.gpu


@pytest.fixture
def ga(ctx, fake):
    import cuplug.gpuarray as gpuarray

    fake.clear_launches()
    return gpuarray


def test_a_ufunc_runs_the_operation_tables_kernel(ga, fake):
    g = ga.zeros((4, 5), np.float32)
    cumath.sin(g)
    by_cumath = fake.last_launch().function
    r = np.sin(g)
    assert isinstance(r, GPUArray) and r.shape == (4, 5) and r.dtype == np.float32
    assert fake.last_launch().function == by_cumath
    assert np.degrees(g).dtype == np.float32  # an alias of rad2deg in the table
    assert np.add(g, 1).dtype == np.float32  # a Python scalar is weak (NEP 50)
    assert np.add(g, np.float64(1)).dtype == np.result_type(np.float32, np.float64(1))


def test_out_is_written_and_returned(ga):
    g, h = ga.zeros(8, np.float32), ga.empty(8, np.float32)
    assert np.add(g, 1, out=h) is h
    assert np.multiply(g, 2, out=(h,)) is h
    mant, expo = ga.empty(8, np.float32), ga.empty(8, np.int32)
    assert np.frexp(g, out=(mant, expo)) == (mant, expo)
    with pytest.raises(TypeError, match="same_kind"):
        np.sin(g, out=ga.empty(8, np.int32))


def test_a_scalar_on_the_left_takes_the_operator(ga):
    g = ga.zeros(8, np.float32)
    for r in (np.float32(2) * g, np.float64(1) + g, np.int32(3) - g, np.float32(1) / g):
        assert isinstance(r, GPUArray) and r.shape == (8,)
    assert (np.float32(2) * g).dtype == np.float32


def test_reduce_and_accumulate_are_the_reductions_and_scans(ga):
    a = ga.zeros((3, 4), np.float32)
    assert np.add.reduce(a).shape == (4,)  # NumPy's default axis 0
    assert np.add.reduce(a, axis=None).shape == ()
    assert np.maximum.reduce(a, axis=1, keepdims=True).shape == (3, 1)
    assert np.logical_or.reduce(a, axis=0).dtype == np.bool_
    assert np.add.accumulate(ga.zeros(6, np.int32)).shape == (6,)
    with pytest.raises(TypeError, match=r"numpy\.subtract\.reduce is not implemented"):
        np.subtract.reduce(a)
    with pytest.raises(TypeError, match=r"numpy\.add\.outer is not implemented"):
        np.add.outer(a, a)


def test_functions_run_cuplugs_routines(ga):
    g = ga.zeros((2, 6), np.float32)
    assert np.sum(g).shape == () and np.sum(g, axis=0).shape == (6,)
    assert np.mean(g, axis=1, keepdims=True).shape == (2, 1)
    assert np.max(g).dtype == np.float32 and np.argmax(g, axis=1).shape == (2,)
    assert np.cumsum(g, axis=1).shape == (2, 6)
    assert np.concatenate([g, g]).shape == (4, 6) and np.stack([g, g], axis=1).shape == (2, 2, 6)
    assert np.where(g > 0, g, 0).shape == (2, 6)
    assert np.clip(g, 0, 1).shape == (2, 6)
    assert np.reshape(g, (3, 4)).shape == (3, 4) and np.transpose(g).shape == (6, 2)
    assert np.ravel(g).shape == (12,) and np.squeeze(ga.zeros((1, 3), np.float32)).shape == (3,)
    assert np.swapaxes(g, 0, 1).shape == (6, 2) and np.copy(g).shape == (2, 6)
    z = np.zeros_like(g, dtype=np.int16)
    assert isinstance(z, GPUArray) and z.dtype == np.int16
    v = ga.zeros(5, np.float32)
    assert np.dot(v, v).shape == () and np.vdot(v, v).shape == ()
    assert np.take(v, ga.zeros(3, np.int32)).shape == (3,)


def test_metadata_functions_need_no_device_work(ga, fake):
    g = ga.zeros((2, 3), np.float16)
    fake.clear_launches()
    assert np.shape(g) == (2, 3) and np.ndim(g) == 2 and np.size(g) == 6 and np.size(g, 1) == 3
    assert np.result_type(g, 1.0) == np.float16 and np.result_type(g, np.float32) == np.float32
    assert np.can_cast(g, np.float32) and not np.can_cast(g, np.int8)
    assert not np.iscomplexobj(g) and np.isrealobj(g)
    assert fake.launch_count() == 0


def test_what_is_not_implemented_names_the_function(ga):
    g = ga.zeros(8, np.float32)
    with pytest.raises(TypeError, match=r"numpy\.gcd is not implemented for cuplug GPUArrays"):
        np.gcd(g, g)
    with pytest.raises(TypeError, match=r"numpy\.median is not implemented"):
        np.median(g)
    with pytest.raises(TypeError, match=r"numpy\.sin on cuplug GPUArrays takes out= only"):
        np.sin(g, where=True)
    with pytest.raises(TypeError, match=r"numpy\.where .* three arguments"):
        np.where(g)
    with pytest.raises(TypeError, match=r"numpy\.dot .* matrix product"):
        np.dot(ga.zeros((2, 2), np.float32), ga.zeros((2, 2), np.float32))
    with pytest.raises(TypeError, match="initial"):
        np.sum(g, initial=1)


def test_host_arrays_are_refused_not_copied(ga, fake):
    g = ga.zeros(8, np.float32)
    host = np.ones(8, np.float32)
    fake.clear_launches()
    for call in (
        lambda: np.add(g, host),
        lambda: host * g,
        lambda: g + host if False else np.multiply(host, g),
        lambda: np.concatenate([g, host]),
        lambda: np.add(host, 1, out=g),
    ):
        with pytest.raises(TypeError, match="numpy.ndarray .*host memory"):
            call()
    assert fake.launch_count() == 0
    # A 0-d array is a scalar to NumPy's rules, and to these.
    assert np.add(g, np.array(2.0, np.float32)).dtype == np.float32


def test_every_ufunc_of_the_table_is_reachable():
    # Every row with a NumPy ufunc answers that ufunc; only the listed NumPy ufuncs do not.
    from cuplug._codegen.ops import TABLE

    rows = {row.ufunc for row in TABLE if row.ufunc is not None}
    assert rows <= set(numpy_protocols._UFUNCS)
    missing = sorted(
        name
        for name in dir(np)
        if isinstance(getattr(np, name), np.ufunc)
        and getattr(np, name) not in numpy_protocols._UFUNCS
    )
    assert "sin" not in missing and "add" not in missing and "gcd" in missing
