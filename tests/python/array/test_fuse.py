"""cuplug.fuse against the fake CUDA driver: tracing, the one kernel a call launches and its
source, result dtypes against the unfused operation table and NumPy for many dtype pairs, the
per-signature cache (a second call traces and compiles nothing) and the errors that name the
construct and the line. Values: test_fuse_gpu.py on a real GPU."""

from __future__ import annotations

import numpy as np
import pytest
from support.dtype_matrix import ARRAY_DTYPES

import cuplug
from cuplug import cumath
from cuplug._array.math import kernel_for
from cuplug._kernels import engine

pytestmark = pytest.mark.gpu

DTYPES = ARRAY_DTYPES


@pytest.fixture
def compiles(monkeypatch):
    """How many modules the engine compiles (its SourceModule calls)."""
    count = []
    real = engine.SourceModule

    def counting(*args, **kwargs):
        count.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "SourceModule", counting)
    return count


def test_decorator_and_call_forms_launch_one_kernel(env):
    gpuarray, fake = env

    @cuplug.fuse
    def gauss(x, a, b):
        return cumath.exp(-x * x / 2) * a + b

    x, a, b = (gpuarray.empty(1000, np.float32) for _ in range(3))
    r = gauss(x, a, b)
    assert r.dtype == np.float32 and r.shape == (1000,)
    assert fake.launch_count() == 1
    assert fake.last_launch().function.startswith("cuplug_fuse_gauss")
    assert cuplug.fuse(lambda x: x + 1)(x).dtype == np.float32
    assert gauss.__name__ == "gauss"


def test_kernel_source_chains_the_unfused_statements(env):
    gpuarray, _ = env
    f = cuplug.fuse(lambda x, y: cumath.sqrt(x * y + 1.5))
    x = gpuarray.empty(8, np.float32)
    y = gpuarray.empty(8, np.int16)
    k = f.kernel(x, y)
    # float32 * int16 -> float32, + weak 1.5 -> float32, sqrt -> float32
    assert [a.name for a in k.args] == ["o0", "a0", "a1", "p0"]
    assert [a.vector for a in k.args] == [True, True, True, False]
    assert k.args[0].dtype == np.float32 and k.args[3].dtype == np.float32
    src, _ = k.source("cccs")
    assert "float t0_0;" in src and "float t1_0;" in src and "float t2_0;" in src
    assert "o0[i] = t2_0;" in src
    assert "sqrt(a)" in src and "p0" in src
    assert "x0[i]" not in k.operation and "z[i]" not in k.operation


@pytest.mark.parametrize("dt1", DTYPES)
@pytest.mark.parametrize("dt2", [np.bool_, np.int8, np.int32, np.uint64, np.float32, np.complex64])
def test_result_dtypes_are_numpys_and_the_unfused_ones(env, dt1, dt2):
    gpuarray, _ = env
    x = gpuarray.empty(4, dt1)
    y = gpuarray.empty(4, dt2)
    ops = {
        "add": lambda a, b: a + b,
        "multiply": lambda a, b: a * b,
        "true_divide": lambda a, b: a / b,
        "less": lambda a, b: a < b,
        "maximum": gpuarray.maximum,
    }
    for name, op in ops.items():
        try:
            want = kernel_for(name, (np.dtype(dt1), np.dtype(dt2))).args[0].dtype
        except TypeError:
            with pytest.raises(TypeError):
                cuplug.fuse(op).kernel(x, y)
            continue
        assert want == np.result_type(np.dtype(dt1), np.dtype(dt2)) or name in (
            "less",
            "true_divide",
        )
        # .kernel() traces without compiling: the output argument's dtype is the result's
        assert cuplug.fuse(op).kernel(x, y).args[0].dtype == want, name
        # a chain: every node in the dtype the unfused intermediate has
        try:
            chained = np.sin(np.zeros(1, dt1) * np.zeros(1, dt2)) + 1
        except TypeError:
            continue
        got = cuplug.fuse(lambda a, b: cumath.sin(a * b) + 1).kernel(x, y).args[0]
        assert got.dtype == chained.dtype


@pytest.mark.parametrize(
    "scalar, dt, want",
    [
        (2, np.int8, np.int8),  # weak Python int keeps the array's dtype
        (2.5, np.float16, np.float16),
        (2.5, np.int32, np.float64),
        (1j, np.float32, np.complex64),
        (np.float64(2), np.float32, np.float64),  # NumPy scalars are strong
        (np.int64(2), np.int8, np.int64),
        (True, np.int16, np.int16),
    ],
)
def test_scalar_arguments_are_weak_or_strong_as_unfused(env, scalar, dt, want):
    gpuarray, fake = env
    x = gpuarray.empty(4, dt)
    f = cuplug.fuse(lambda x, s: x * s)
    assert f(x, scalar).dtype == want == (x * scalar).dtype
    assert cuplug.fuse(lambda x: x * scalar)(x).dtype == want  # a captured constant alike


def test_scalar_host_expressions_and_values_each_call(env):
    gpuarray, fake = env
    f = cuplug.fuse(lambda x, a, b: x * (a + 1) - b / 2)
    x = gpuarray.empty(4, np.float32)
    assert f(x, 3, 4).dtype == np.float32
    k = f.kernel(x, 3, 4)
    scalars = [a for a in k.args if not a.vector]
    assert len(scalars) == 2 and all(a.dtype == np.float32 for a in scalars)
    f(x, 5, 6)
    assert fake.launch_count() == 2


def test_numpy_ufuncs_and_numpy_scalars_trace_as_the_table_rows(env):
    gpuarray, fake = env
    x = gpuarray.empty(4, np.float32)
    k = cuplug.fuse(lambda x: np.exp(np.float32(2) * x) + np.sin(x)).kernel(x)
    assert k.args[0].dtype == np.float32 and "exp(a)" in k.operation
    assert cuplug.fuse(lambda x: np.float64(2) * x).kernel(x).args[0].dtype == np.float64


def test_where_comparisons_casts_abs_and_two_outputs(env):
    gpuarray, fake = env

    @cuplug.fuse
    def f(x, y):
        m, e = cumath.frexp(abs(x))
        c = gpuarray.where(x > y, x, y.astype(np.float64))
        return c + m, e

    x = gpuarray.empty((3, 4), np.float32)
    y = gpuarray.empty(4, np.int32)
    c, e = f(x, y)
    assert c.dtype == np.float64 and e.dtype == np.int32
    assert c.shape == e.shape == (3, 4)
    assert fake.launch_count() == 1


def test_results_of_different_unfused_shapes_are_refused(env):
    gpuarray, fake = env
    f = cuplug.fuse(lambda x, y: (x + 1, y * 2))
    a, b = f(gpuarray.empty((3, 4), np.float32), gpuarray.empty((3, 4), np.float32))
    assert a.shape == b.shape == (3, 4)
    with pytest.raises(ValueError, match="different shapes"):
        f(gpuarray.empty((3, 4), np.float32), gpuarray.empty(4, np.float32))
    assert fake.launch_count() == 1


def test_broadcasting_and_strides_are_the_engines(env):
    gpuarray, fake = env
    f = cuplug.fuse(lambda x, y: x - y)
    x = gpuarray.empty((6, 8), np.float32)[::2, 1::3]
    y = gpuarray.empty((1, 3), np.float64)
    r = f(x, y)
    assert r.shape == (3, 3) and r.dtype == np.float64
    assert fake.launch_count() == 1
    with pytest.raises(ValueError, match="could not be broadcast"):
        f(gpuarray.empty(3, np.float32), gpuarray.empty(4, np.float32))


def test_second_call_traces_and_compiles_nothing(env, compiles):
    gpuarray, fake = env
    traced = []

    @cuplug.fuse
    def f(x, y):
        traced.append(1)
        return x * y + 1

    x = gpuarray.empty(16, np.float32)
    f(x, x)
    n = len(compiles)
    f(x, x)
    f(gpuarray.empty(16, np.float32), gpuarray.empty(16, np.float32))
    assert len(traced) == 1 and len(compiles) == n
    assert fake.launch_count() == 3
    f(x, gpuarray.empty(16, np.float64))  # a new signature: traced again
    assert len(traced) == 2
    f(x, 2)
    f(x, 3)
    assert len(traced) == 3


def test_integer_power_of_a_negative_scalar_exponent_is_refused(env):
    gpuarray, _ = env
    f = cuplug.fuse(lambda x, n: x**n)
    x = gpuarray.empty(4, np.int32)
    assert f(x, 2).dtype == np.int32
    with pytest.raises(ValueError, match="negative integer powers"):
        f(x, -1)


def _branchy(x):
    if x > 0:  # the line the error names
        return x
    return -x


@pytest.mark.parametrize(
    "fn, construct",
    [
        (_branchy, "truth value"),
        (lambda x: float(x) + x, "float()"),
        (lambda x: x.get(), r"attribute \.get"),
        (lambda x: x[0], "indexing"),
        (lambda x: np.add.reduce(x), "numpy.add.reduce"),
        (lambda x: np.sum(x), r"attribute \.sum"),
        (lambda x: np.gcd(x, x), "numpy.gcd"),
        (lambda x: len(x) + x, "len()"),
        (lambda x: 3, "must return GPUArray"),
    ],
)
def test_untraceable_constructs_name_the_construct_and_line(env, fn, construct):
    gpuarray, fake = env
    x = gpuarray.empty(4, np.float32)
    with pytest.raises(TypeError, match=construct) as info:
        cuplug.fuse(fn)(x)
    if construct != "must return GPUArray":
        assert "test_fuse.py:" in str(info.value)
    assert fake.launch_count() == 0


def test_branch_error_names_the_if_line(env):
    gpuarray, _ = env
    with pytest.raises(cuplug.fusion.FuseError, match=r"if x > 0"):
        cuplug.fuse(_branchy)(gpuarray.empty(4, np.float32))


def test_non_argument_gpuarrays_and_bad_arguments_are_refused(env):
    gpuarray, _ = env
    g = gpuarray.empty(4, np.float32)
    with pytest.raises(TypeError, match="not an argument"):
        cuplug.fuse(lambda x: x + g)(g)
    with pytest.raises(TypeError, match="arguments are GPUArrays and scalars"):
        cuplug.fuse(lambda x: x + 1)(np.zeros(4))
    with pytest.raises(TypeError, match="arguments are GPUArrays and scalars"):
        cuplug.fuse(lambda x, s: x + 1)(g, "s")
    with pytest.raises(TypeError, match="out="):
        cuplug.fuse(lambda x: cumath.sin(x, out=g))(g)


def test_unsupported_dtype_combination_is_the_unfused_error(env):
    gpuarray, _ = env
    b = gpuarray.empty(4, np.bool_)
    with pytest.raises(TypeError):
        b - b
    with pytest.raises(TypeError):
        cuplug.fuse(lambda x: x - x)(b)


def test_branching_on_a_scalar_argument_is_refused(env):
    gpuarray, _ = env

    def f(x, s):
        if s > 0:
            return x * s
        return x

    with pytest.raises(TypeError, match="truth value of a scalar argument"):
        cuplug.fuse(f)(gpuarray.empty(4, np.float32), 2)


def test_ldexp_float_exponent_argument_is_truncated_as_unfused(env):
    gpuarray, fake = env
    x = gpuarray.empty(4, np.float32)
    f = cuplug.fuse(lambda x, e: cumath.ldexp(x, e))
    k = f.kernel(x, 2.5)
    assert [a.dtype for a in k.args if not a.vector] == [np.dtype(np.int32)]
    assert f(x, 2.5).dtype == cumath.ldexp(x, 2.5).dtype == np.float32


def test_unused_arguments_take_no_part(env):
    gpuarray, fake = env
    f = cuplug.fuse(lambda x, y: x + 1)
    k = f.kernel(gpuarray.empty(4, np.float32), gpuarray.empty(7, np.int8))
    assert [a.name for a in k.args] == ["o0", "a0", "p0"]
    assert f(gpuarray.empty(4, np.float32), gpuarray.empty(7, np.int8)).shape == (4,)
