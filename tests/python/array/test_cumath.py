"""cuplug.cumath without a GPU: the table's result dtypes against NumPy's for every function and
dtype, the kernels it generates compiling to PTX with NVRTC (batched: one program per layout),
float kernels free of double-precision arithmetic, and argument errors."""

import re

import numpy as np
import pytest

from cuplug import cumath
from cuplug._codegen.elementwise import Layout, generate

FLOATS = [np.float16, np.float32, np.float64]
COMPLEX = [np.complex64, np.complex128]
INTS = [np.bool_, np.int8, np.uint16, np.int32, np.int64]
ALL = [np.dtype(t) for t in FLOATS + COMPLEX + INTS]
# PyCUDA's cumath (spec section 7): each must take every float and complex dtype, except the
# four whose meaning is real-only (NumPy refuses complex for them too).
PYCUDA = [
    "fabs",
    "ceil",
    "floor",
    "exp",
    "log",
    "log10",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "fmod",
    "frexp",
    "ldexp",
    "modf",
]
REAL_ONLY = {"fmod", "frexp", "ldexp", "modf"}
NUMPY_NAMES = [
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "exp2",
    "expm1",
    "log2",
    "log1p",
    "cbrt",
    "arctan2",
    "hypot",
    "power",
    "square",
    "rint",
    "trunc",
    "deg2rad",
    "rad2deg",
    "degrees",
    "radians",
    "copysign",
    "fmin",
    "fmax",
    "logaddexp",
    "logaddexp2",
]


def operands_for(fn, dtype):
    """Operand dtypes for fn over dtype (the exponent of ldexp is int32)."""
    if fn.name == "ldexp":
        return [dtype, np.dtype(np.int32)]
    return [dtype] * fn.nin


def supported(fn, dtype):
    try:
        return cumath.loop_dtypes(fn, operands_for(fn, dtype))
    except TypeError:
        return None


def numpy_result(fn, dtypes):
    samples = [np.ones(2, dt) for dt in dtypes]
    with np.errstate(all="ignore"):
        out = fn.ufunc(*samples)
    return tuple(o.dtype for o in (out if isinstance(out, tuple) else (out,)))


def test_every_name_is_a_function():
    for name in PYCUDA + NUMPY_NAMES:
        assert callable(getattr(cumath, name)), name
        assert name in cumath.__all__
    assert cumath.function("arcsin") is cumath.function("asin")
    with pytest.raises(AttributeError, match="no function 'nope'"):
        cumath.function("nope")


@pytest.mark.parametrize("name", PYCUDA)
def test_pycuda_functions_take_every_float_and_complex_dtype(name):
    fn = cumath.function(name)
    for dtype in FLOATS + COMPLEX:
        dtype = np.dtype(dtype)
        loop = supported(fn, dtype)
        if dtype.kind == "c" and name in REAL_ONLY:
            assert loop is None, (name, dtype)
            with pytest.raises(TypeError, match=rf"cumath\.{name} is not defined for {dtype}"):
                cumath.loop_dtypes(fn, operands_for(fn, dtype))
        else:
            assert loop is not None, (name, dtype)


@pytest.mark.parametrize("fn", cumath.FUNCTIONS, ids=lambda f: f.name)
def test_result_dtypes_are_numpys(fn):
    for dtype in ALL:
        ops = operands_for(fn, dtype)
        loop = supported(fn, dtype)
        try:
            expected = numpy_result(fn, ops)
        except TypeError:
            expected = None
        if expected is None:
            # Only the documented extensions go where NumPy does not.
            if loop is not None:
                assert dtype.kind == "c" and fn.complex_out, (fn.name, dtype)
                want = dtype if fn.complex_out == "same" else np.dtype(dtype.char.lower())
                assert loop[1] == (want,)
            continue
        if loop is None:
            # NumPy has a loop the table does not: only integer loops of float functions.
            assert getattr(fn, {"c": "complex", "f": "real"}.get(dtype.kind, "integer")) is None
            continue
        assert loop[1] == expected, (fn.name, dtype, loop, expected)


def test_promotion_follows_numpy_for_mixed_operands_and_scalars():
    atan2 = cumath.function("atan2")
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert cumath.loop_dtypes(atan2, [f32, f64])[1] == (f64,)
    assert cumath.loop_dtypes(atan2, [f32, 2.0])[1] == (f32,)  # a Python float is weak
    assert cumath.loop_dtypes(atan2, [np.dtype(np.int8), np.dtype(np.int8)])[1] == (
        np.dtype(np.float16),
    )
    sin = cumath.function("sin")
    assert cumath.loop_dtypes(sin, [np.dtype(np.int32)])[1] == (f64,)
    assert cumath.loop_dtypes(sin, [np.dtype(np.int16)])[1] == (f32,)
    # PyCUDA's ldexp took float exponents; they are truncated to int.
    assert cumath.loop_dtypes(cumath.function("ldexp"), [f32, f32])[1] == (f32,)
    # frexp's exponents are int32, as NumPy's.
    assert cumath.loop_dtypes(cumath.function("frexp"), [f64])[1] == (f64, np.dtype(np.int32))


# {{{ every kernel compiles


def all_kernels():
    """(entry, loop dtypes, source) per kernel: every function x dtype contiguous, and vectorised
    and strided-with-a-scalar layouts for some dtypes."""
    out = []
    for fn in cumath.FUNCTIONS:
        for dtype in ALL:
            ops = operands_for(fn, dtype)
            loop = supported(fn, dtype)
            if loop is None:
                continue
            classes = "c" * (fn.nout + fn.nin)
            layouts = [Layout(classes)]
            # The other layouts for one dtype each: they change the accesses, not the math.
            if dtype in (np.float16, np.complex128):
                layouts.append(Layout(classes, vec=2))
            if dtype == np.float64 and fn.nin == 2:
                # x1 strided over 2-d, x2 a scalar by value (cumath.atan2(x[::2], 3.0)).
                layouts.append(Layout("c" * fn.nout + "gs", ndim=2))
            for layout in layouts:
                scalars = (1,) if layout.classes.endswith("s") else ()
                parts = cumath.kernel_parts(fn, ops, loop[1], loop, scalars)
                name = f"{parts.name}_{layout.key}"
                src, entry = generate(
                    parts.args, parts.operation, name, layout, parts.preamble, parts.loop_prep
                )
                out.append((entry, loop, src))
    return out


def compile_ptx(sources):
    from cuplug.compiler import compile

    try:
        return compile(
            "\n".join(sources),
            arch="compute_90",
            target="ptx",
            backend="nvrtc",
            no_extern_c=True,
            cache_dir=False,
        ).decode()
    except Exception as e:  # noqa: BLE001 - NVRTC missing is a skip, anything else a failure
        if "nvrtc" in str(e).lower() and "not" in str(e).lower() and "available" in str(e):
            pytest.skip(f"NVRTC is not available here: {e}")
        raise


@pytest.fixture(scope="module")
def kernels():
    return all_kernels()


@pytest.fixture(scope="module")
def ptx(kernels):
    # Two programs: real kernels without the complex header, complex ones with it.
    real = [src for _, loop, src in kernels if not any(d.kind == "c" for d in loop[0])]
    cplx = [src for _, loop, src in kernels if any(d.kind == "c" for d in loop[0])]
    return compile_ptx(real) + "\n" + compile_ptx(cplx)


def entries(ptx_text):
    """{entry name: body} of the PTX."""
    parts = re.split(r"^\.visible \.entry (\w+)\(", ptx_text, flags=re.M)
    return {parts[k]: parts[k + 1] for k in range(1, len(parts) - 1, 2)}


def test_every_function_and_dtype_compiles_to_ptx(kernels, ptx):
    found = entries(ptx)
    missing = [name for name, _, _ in kernels if name not in found]
    assert not missing, f"{len(missing)} kernels missing from the PTX: {missing[:10]}"
    assert len(kernels) > 300


def test_single_precision_kernels_never_promote_to_double(kernels, ptx):
    """float16/float32/complex64 loops call the float overloads (sinf, not sin): no float value
    is converted to double (cvt.f64.f32), which calling a double function would need. (sinf's
    own slow path uses f64 from integers; that is CUDA's, and allowed.)"""
    found = entries(ptx)
    single = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)}
    bad = []
    for name, loop, _ in kernels:
        dtypes = (*loop[0], *loop[1])
        if any(d.kind in "fc" and d not in single for d in dtypes):
            continue
        if any(d.kind in "iub" and d.itemsize > 2 for d in loop[0]):
            continue  # int32/int64 inputs of float loops come as float64 (NumPy's rule)
        if re.search(r"cvt(\.\w+)*\.f64\.f32", found[name]):
            bad.append(name)
    assert not bad, f"single-precision kernels promoting to double: {bad}"


# }}}
