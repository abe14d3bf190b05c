"""Calls PyCUDA accepts that cuplug refused (issue 24, part B): cumath's positional stream and
operand keywords, and vec.make_<type>(x=, y=, ...). Fake driver: launches are recorded, not run
(results: test_pycuda_names_gpu.py)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug import cumath, gpuarray

# ---- cumath --------------------------------------------------------------------------------------


@pytest.fixture
def arrays(ctx):
    a = gpuarray.to_gpu(np.linspace(1, 2, 16, dtype=np.float32))
    b = gpuarray.to_gpu(np.linspace(2, 3, 16, dtype=np.float32))
    return a, b, drv.Stream()


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fmod", "ldexp"])
def test_binary_functions_take_pycudas_positional_stream(arrays, fake, name):
    a, b, s = arrays
    fake.clear_launches()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PyCUDA's stream parameter: no deprecation
        result = getattr(cumath, name)(a, b, s)
    assert result.shape == a.shape
    assert fake.last_launch().stream == s.handle


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["frexp", "modf"])
def test_two_output_functions_take_pycudas_positional_stream(arrays, fake, name):
    a, _, s = arrays
    fake.clear_launches()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first, second = getattr(cumath, name)(a, s)
    assert first.shape == second.shape == a.shape
    assert fake.last_launch().stream == s.handle


@pytest.mark.gpu
def test_operand_keywords_are_pycudas(arrays, fake):
    a, b, s = arrays
    for name in ("fabs", "ceil", "floor", "exp", "log", "log10", "sqrt", "sin", "cos", "tan",
                 "asin", "acos", "atan", "sinh", "cosh", "tanh"):  # fmt: skip
        assert getattr(cumath, name)(array=a).shape == a.shape, name
    assert cumath.fmod(arg=a, mod=b).shape == a.shape
    assert cumath.fmod(a, mod=b, stream=s).shape == a.shape
    assert cumath.ldexp(significand=a, exponent=b).shape == a.shape
    assert len(cumath.frexp(arg=a)) == 2 and len(cumath.modf(arg=a, stream=s)) == 2
    fake.clear_launches()
    with pytest.warns(DeprecationWarning, match="positional argument is deprecated"):
        cumath.sin(array=a, stream_or_out=s)
    assert fake.last_launch().stream == s.handle
    out = gpuarray.empty_like(a)
    with pytest.warns(DeprecationWarning):
        assert cumath.exp(a, out) is out


@pytest.mark.gpu
def test_bad_cumath_calls_say_what_is_wrong(arrays):
    a, b, s = arrays
    with pytest.raises(TypeError, match=r"sin\(\) got unexpected keyword argument\(s\) x; it "):
        cumath.sin(x=a)
    with pytest.raises(TypeError, match=r"fmod\(\) missing operand\(s\) 'mod'"):
        cumath.fmod(a)
    with pytest.raises(TypeError, match="multiple values for argument 'arg'"):
        cumath.fmod(a, b, arg=a)
    with pytest.raises(TypeError, match="multiple values for argument 'stream'"):
        cumath.fmod(a, b, s, stream=s)
    with pytest.raises(TypeError, match=r"takes 2 operand\(s\) and one stream, got 4"):
        cumath.fmod(a, b, s, s)
    with pytest.raises(TypeError, match="stream given twice"), pytest.warns(DeprecationWarning):
        cumath.sin(a, s, stream=s)


def test_signatures_are_pycudas():
    assert list(inspect.signature(cumath.sin).parameters) == [
        "array", "stream_or_out", "out", "stream"]  # fmt: skip
    assert list(inspect.signature(cumath.fmod).parameters) == ["arg", "mod", "stream", "out"]
    assert list(inspect.signature(cumath.ldexp).parameters)[:3] == [
        "significand", "exponent", "stream"]  # fmt: skip
    assert list(inspect.signature(cumath.frexp).parameters)[:2] == ["arg", "stream"]
    assert "stream_or_out" in cumath.sin.__doc__


# ---- vec -----------------------------------------------------------------------------------------


def test_make_vector_takes_field_names():
    v = gpuarray.vec.make_float3(x=1, y=2, z=3)
    assert v.dtype == gpuarray.vec.float3
    assert (float(v["x"]), float(v["y"]), float(v["z"])) == (1.0, 2.0, 3.0)
    w = gpuarray.vec.make_int4(1, 2, z=3, w=4)
    assert [int(w[f]) for f in "xyzw"] == [1, 2, 3, 4]
    assert list(inspect.signature(gpuarray.vec.make_double2).parameters) == ["x", "y"]
    with pytest.raises(TypeError, match=r"make_float3\(\) got unexpected keyword.*w; its fields"):
        gpuarray.vec.make_float3(x=1, y=2, z=3, w=4)
    with pytest.raises(TypeError, match=r"make_float3\(\) missing field value\(s\) z"):
        gpuarray.vec.make_float3(x=1, y=2)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        gpuarray.vec.make_float2(1, x=2, y=3)
