"""GPUArray against the fake CUDA driver: transfers, what each operation launches (the parameter
buffer decoded field by field), result dtypes, streams, creation functions, errors. Memory,
allocators and contexts: test_fake_arrays_memory.py. Kernels do not run here; their results are
checked on a GPU by test_ops_gpu.py and test_api_gpu.py beside this file."""

from __future__ import annotations

import pickle
import struct
import warnings

import numpy as np
import pytest
from support.dtype_matrix import ARRAY_DTYPES

import cuplug.driver as drv
from cuplug import _core
from cuplug._array.math import kernel_for
from cuplug._codegen import elementwise as cg
from cuplug.gpuarray import GPUArray

pytestmark = pytest.mark.gpu

DTYPES = ARRAY_DTYPES


def decode(launch, kernel, plan):
    """The fields of a launch's parameter buffer, by the generator's own layout model."""
    layout = cg.Layout(plan["classes"], ndim=plan["ndim"], vec=plan["vec"], index64=plan["index64"])
    fields, total = cg.param_layout(kernel.args, layout)
    assert len(launch.params) == total, "packed size differs from the kernel's parameters"
    values = []
    for (off, size), arg in zip(fields, kernel.args):
        raw = launch.params[off : off + size]
        values.append(
            struct.unpack("<Q", raw)[0] if arg.vector else np.frombuffer(raw, arg.dtype)[0]
        )
    rest = fields[len(kernel.args) :]
    fmt = "<Q" if plan["index64"] else "<I"
    off, size = rest[-1]
    n = struct.unpack(fmt, launch.params[off : off + size])[0]
    nd = None
    if len(rest) == 2:
        off, size = rest[0]
        nd = launch.params[off : off + size]
    return values, n, nd


def test_seed_example_runs_one_multiply_kernel(env):
    gpuarray, fake = env
    g = gpuarray.to_gpu(np.array([1, 2, 3, 4, 5], dtype=np.float32))
    assert (g.get() == [1, 2, 3, 4, 5]).all()
    fake.clear_launches()
    h = g * 2.0
    assert (h.shape, h.dtype, type(h)) == ((5,), np.float32, GPUArray)
    assert fake.launch_count() == 1
    launch = fake.last_launch()
    kernel = kernel_for("multiply", (np.dtype(np.float32), float))
    plan = kernel.plan(h, g, 2.0)
    assert launch.function == f"{kernel.name}_{cg.Layout(plan['classes'], vec=plan['vec']).key}"
    (z, x, s), n, nd = decode(launch, kernel, plan)
    assert (z, x, s, n, nd) == (h.ptr, g.ptr, np.float32(2.0), 5, None)
    assert launch.block == (256, 1, 1) and launch.grid == (1, 1, 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trips_keep_values_shape_and_axis_order(env, dtype):
    gpuarray, _ = env
    rng = np.random.default_rng(0)
    host = (rng.standard_normal((3, 4, 5)) * 50).astype(dtype)
    for h in (host, np.asfortranarray(host), host.transpose(2, 0, 1), host[::2, :, ::-1]):
        g = gpuarray.to_gpu(h)
        back = g.get()
        np.testing.assert_array_equal(back, h)
        if h.flags.f_contiguous and not h.flags.c_contiguous:
            assert g.flags.f_contiguous and back.flags.f_contiguous
        out = np.empty(h.shape, dtype)
        assert g.get(out) is out
        np.testing.assert_array_equal(out, h)
        np.testing.assert_array_equal(g.get(pagelocked=True), h)
        np.testing.assert_array_equal(g.copy().get(), h)
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(g)).get(), h)


def test_set_and_get_argument_checks(env):
    gpuarray, _ = env
    g = gpuarray.empty((2, 3), np.float32)
    with pytest.raises(ValueError, match="same size"):
        g.set(np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="same dtype"):
        g.set(np.zeros((2, 3), np.float64))
    with pytest.warns(UserWarning, match="different shape"):
        g.set(np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(g.get(), np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(TypeError, match="same dtype"):
        g.get(np.zeros((2, 3), np.float64))
    buffer = np.zeros(6, np.float32)
    with pytest.warns(DeprecationWarning):
        got = g.get(buffer)
    # PyCUDA's answer to a buffer of another shape: the buffer, filled and reshaped to g's shape.
    assert got.shape == (2, 3) and np.shares_memory(got, buffer)
    np.testing.assert_array_equal(buffer, np.arange(6, dtype=np.float32))
    g.set_async(np.ones((2, 3), np.float32))
    res = g.get_async()
    drv.Context.synchronize()
    np.testing.assert_array_equal(res, np.ones((2, 3), np.float32))


def test_broadcast_launch_carries_shape_and_strides(env):
    gpuarray, fake = env
    a = gpuarray.zeros((16, 32), np.float32)
    row = gpuarray.zeros((32,), np.float32)
    col = gpuarray.zeros((16, 1), np.float32)
    fake.clear_launches()
    out = a + col
    kernel = kernel_for("add", (np.dtype(np.float32), np.dtype(np.float32)))
    plan = kernel.plan(out, a, col)
    assert plan["classes"] == "ccb"
    (z, x, y), n, nd = decode(fake.last_launch(), kernel, plan)
    assert (z, x, y, n) == (out.ptr, a.ptr, col.ptr, 512)
    shape = struct.unpack("<2I", nd[:8])
    assert shape == (16, 8)
    assert struct.unpack("<2i", nd[24:32]) == (1, 0)
    out = a + row
    assert out.shape == (16, 32)


def test_negative_strides_start_at_the_far_end(env):
    gpuarray, fake = env
    x = gpuarray.zeros((8,), np.float32)
    fake.clear_launches()
    y = x[::-1] * 2
    kernel = kernel_for("multiply", (np.dtype(np.float32), int))
    plan = kernel.plan(y, x[::-1], 2)
    (z, xp, _), n, nd = decode(fake.last_launch(), kernel, plan)
    assert plan["classes"][:2] == "cg"
    assert n == 8 and xp == x.ptr + 7 * 4


@pytest.mark.parametrize(
    "scalar, dtype",
    [
        (1.5, np.float16),
        (2 + 1j, np.complex128),
        (True, np.bool_),
        (-3, np.int64),
        (7, np.uint8),
        (0.25, np.float64),
    ],
)
def test_scalar_arguments_pack_with_their_alignment(env, scalar, dtype):
    gpuarray, fake = env
    x = gpuarray.zeros((10,), dtype)
    fake.clear_launches()
    y = x + scalar
    kernel = kernel_for("add", (np.dtype(dtype), type(scalar)))
    plan = kernel.plan(y, x, scalar)
    (_, _, s), n, _ = decode(fake.last_launch(), kernel, plan)
    assert s == np.array(scalar).astype(kernel.args[2].dtype) and n == 10


def test_64_bit_layouts_pack(env):
    gpuarray, fake = env
    big = GPUArray((4, 16), np.int8, gpudata=gpuarray.zeros((64,), np.int8).ptr, strides=(2**30, 1))
    kernel = kernel_for("add", (np.dtype(np.int8), np.dtype(np.int8)))
    out = gpuarray.zeros((4, 16), np.int8)
    plan = kernel.plan(out, big, out)
    assert plan["index64"]
    fake.clear_launches()
    kernel(out, big, out)
    _, n, nd = decode(fake.last_launch(), kernel, plan)
    assert n == 64 and nd is not None


def test_result_dtypes_follow_numpy(env):
    gpuarray, _ = env
    i = gpuarray.zeros((3,), np.int32)
    f = gpuarray.zeros((3,), np.float32)
    assert (i / 2).dtype == np.float64
    assert (i // 2).dtype == np.int32
    assert (f * 2.0).dtype == np.float32
    assert (f * 2j).dtype == np.complex64
    assert (i < f).dtype == np.bool_
    assert (i + np.int64(1)).dtype == np.int64
    assert (np.float32(2) * i).dtype == np.float64
    assert (2**i).dtype == np.int32
    assert abs(gpuarray.zeros((2,), np.complex64)).dtype == np.float32
    q, r = divmod(i, 3)
    assert q.dtype == r.dtype == np.int32
    assert (+f) is f
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        gpuarray.zeros((3,), np.int8) + 1000
    with pytest.raises(TypeError, match="boolean subtract"):
        gpuarray.zeros((3,), np.bool_) - gpuarray.zeros((3,), np.bool_)
    with pytest.raises(TypeError, match="same_kind"):
        i += 1.5
    c = gpuarray.zeros((3,), np.int8) < 1000  # out of range: answered without converting
    assert c.dtype == np.bool_
    with pytest.raises(TypeError):
        f + "text"
    with pytest.raises(TypeError):
        f + np.zeros(3, np.float32)


def test_inplace_operators_write_into_self(env):
    gpuarray, fake = env
    x = gpuarray.zeros((4, 4), np.float32)
    y = gpuarray.zeros((4,), np.float32)
    ptr = x.ptr
    fake.clear_launches()
    x += 1
    x *= y
    assert x.ptr == ptr and fake.launch_count() == 2
    kernel = kernel_for(
        "multiply", (np.dtype(np.float32), np.dtype(np.float32)), np.dtype(np.float32)
    )
    assert fake.last_launch().function.startswith(kernel.name)


def test_overlapping_inplace_operand_is_copied_first(env):
    gpuarray, fake = env
    x = gpuarray.zeros((8,), np.float32)
    fake.clear_launches()
    x += x[::-1]
    names = [fake.launch(k).function for k in range(fake.launch_count() - 1, -1, -1)]
    assert names[0].startswith("cuplug_copy") and names[1].startswith("cuplug_add")
    fake.clear_launches()
    x += x  # the same view: no copy
    assert fake.launch_count() == 1


def test_streams_are_honoured(env):
    gpuarray, fake = env
    s = drv.Stream()
    x = gpuarray.zeros((100,), np.float32, stream=s)
    assert fake.last_launch().stream == s.handle
    for op in (
        lambda: gpuarray.maximum(x, 1, stream=s),
        lambda: x.fill(3, stream=s),
        lambda: x.astype(np.float64, stream=s),
        lambda: gpuarray.where(x, x, 0, stream=s),
        lambda: x.mul_add(2, x, 3, stream=s),
        lambda: gpuarray.arange(0, 10, 1, dtype=np.float32, stream=s),
    ):
        fake.clear_launches()
        op()
        assert fake.launch_count() >= 1
        assert all(fake.launch(k).stream == s.handle for k in range(fake.launch_count()))


def test_zero_size_operations_launch_nothing(env):
    gpuarray, fake = env
    e = gpuarray.zeros((0, 3), np.float32)
    fake.clear_launches()
    r = e * 2 + e
    assert r.shape == (0, 3) and fake.launch_count() == 0
    assert e.get().shape == (0, 3)
    assert gpuarray.arange(0, dtype=np.float32).shape == (0,)


def test_dispatch_is_cached_after_the_first_call(env):
    gpuarray, _ = env
    x = gpuarray.zeros((10,), np.float32)
    x * 3.0
    size = _core._array.dispatch_cache_size()
    for _ in range(5):
        x * 3.0
        x * 4.0
    assert _core._array.dispatch_cache_size() == size


def test_creation_functions(env):
    gpuarray, _ = env
    assert gpuarray.zeros((2, 3)).dtype == np.float64
    assert gpuarray.ones((2, 3), np.int8, order="F").flags.f_contiguous
    t = gpuarray.empty((3, 4), np.float32).T
    assert gpuarray.empty_like(t).strides == (4, 16)
    assert gpuarray.empty_like(t, order="C").strides == (12, 4)
    assert gpuarray.empty_like(t, order="A").flags.f_contiguous
    assert gpuarray.zeros_like(t, dtype=np.float64).strides == (8, 32)
    with pytest.warns(UserWarning, match="arange guessed dtype"):
        a = gpuarray.arange(5)
    assert a.dtype == np.int64 and a.shape == (5,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gpuarray.arange(1.0, 2.0, 0.25, dtype=np.float32).shape == (4,)
        assert gpuarray.arange(10, 0, -3, np.int16).shape == (4,)
    s = gpuarray.stack([gpuarray.zeros((2, 3)), gpuarray.ones((2, 3))], axis=1)
    assert s.shape == (2, 2, 3)
    c = gpuarray.concatenate([gpuarray.zeros((2, 3), np.int8), gpuarray.ones((1, 3))])
    assert c.shape == (3, 3) and c.dtype == np.float64
    with pytest.raises(ValueError, match="must match exactly"):
        gpuarray.concatenate([gpuarray.zeros((2, 3)), gpuarray.zeros((2, 4))])
    assert repr(gpuarray.zeros(2)) == repr(np.zeros(2))
    assert bool(gpuarray.to_gpu(np.ones(1))) is True
    with pytest.raises(ValueError, match="ambiguous"):
        bool(gpuarray.ones(2))


def test_vec_types_register_and_hold_values(env):
    gpuarray, _ = env
    v = gpuarray.vec.make_float4(1, 2, 3, 4)
    assert v.dtype == gpuarray.vec.float4 and v["x"] == 1 and v["w"] == 4
    from cuplug.tools import dtype_to_ctype

    assert dtype_to_ctype(gpuarray.vec.float4) == "float4"
    a = gpuarray.to_gpu(np.array([v, v]))
    assert a.get()[1]["z"] == 3
    with pytest.raises(TypeError, match="not supported"):
        a + 1


def test_negative_integer_scalar_exponents_are_refused_like_numpy(env):
    gpuarray, _ = env
    i = gpuarray.zeros((3,), np.int32)
    with pytest.raises(ValueError, match="negative integer powers"):
        i**-1
    assert (i**2).dtype == np.int32
    assert (i**-1.0).dtype == np.float64


def test_texture_reference_binding_says_it_is_gone(env):
    gpuarray, _ = env
    with pytest.raises(
        drv.NotSupportedError if hasattr(drv, "NotSupportedError") else _core.NotSupportedError,
        match="CUDA 12",
    ):
        gpuarray.zeros((3,), np.float32).bind_to_texref(None)


@pytest.mark.parametrize(
    "name, operator",
    [
        ("power", lambda x, y: x**y),
        ("rint", lambda x, y: x.round()),
        ("fmin", lambda x, y: _core._array.apply("fmin", (x, y))),
        ("fmax", lambda x, y: _core._array.apply("fmax", (x, y))),
    ],
)
def test_operator_and_cumath_spellings_launch_one_kernel(env, name, operator):
    """One table, one dispatcher: cumath.power(x, y) finds the dispatch entry x ** y made (no
    new resolution, no new kernel) and launches the same entry; likewise rint (round()) and
    fmin / fmax (the ufunc names), which once compiled different kernels per spelling."""
    from cuplug import cumath

    gpuarray, fake = env
    x = gpuarray.to_gpu(np.linspace(0.5, 2.0, 64).astype(np.float32))
    y = gpuarray.to_gpu(np.linspace(1.0, 3.0, 64).astype(np.float32))
    args = (x, y)[: cumath.function(name).nin]
    operator(x, y)
    first = fake.last_launch().function
    entries = _core._array.dispatch_cache_size()
    getattr(cumath, name)(*args)
    assert fake.last_launch().function == first
    assert first.startswith(f"cuplug_{name}_")
    assert _core._array.dispatch_cache_size() == entries


def test_two_output_functions_run_through_the_one_dispatcher(env):
    """frexp and modf are table rows like the operators: one launch writes both results (new
    arrays of NumPy's dtypes, or out= as a tuple, None where the dispatcher allocates), and
    out= that does not fit is refused before anything runs."""
    from cuplug import cumath

    gpuarray, fake = env
    x = gpuarray.to_gpu(np.linspace(0.5, 2.0, 64).astype(np.float32))
    fake.clear_launches()
    mant, expo = cumath.frexp(x)
    assert fake.launch_count() == 1
    assert fake.last_launch().function.startswith("cuplug_frexp_f4i4_f4")
    assert (mant.shape, mant.dtype) == ((64,), np.float32)
    assert (expo.shape, expo.dtype) == ((64,), np.int32)
    m, e = gpuarray.empty_like(x), gpuarray.empty((64,), np.int32)
    assert cumath.frexp(x, out=(m, e)) == (m, e)
    frac, whole = cumath.modf(x, out=(None, gpuarray.empty((64,), np.float64)))
    assert (frac.dtype, whole.dtype) == (np.float32, np.float64)
    fake.clear_launches()
    with pytest.raises(ValueError, match="frexp has 2 outputs, out= gives 1"):
        cumath.frexp(x, out=m)
    x64 = x.astype(np.float64)  # (np.dtype(np.float64) == None is True in NumPy)
    fake.clear_launches()
    with pytest.raises(ValueError, match="frexp has 2 outputs, out= gives 1"):
        cumath.frexp(x64, out=gpuarray.empty_like(x64))
    with pytest.raises(
        TypeError, match=r"Cannot cast ufunc 'frexp' output 0 from dtype\('float32'\)"
    ):
        cumath.frexp(x, out=(gpuarray.empty((64,), np.int8), e))
    with pytest.raises(ValueError, match="sin has 1 outputs, out= gives 2"):
        cumath.sin(x, out=(m, m))
    assert fake.launch_count() == 0
