"""cuplug.cumath without a GPU: the table's result dtypes against NumPy's for every function and
dtype, one kernel per operation whichever way it is spelled, the kernels it generates compiling
to PTX with NVRTC (batched: one program per layout), float kernels free of double-precision
arithmetic, and argument errors."""

import re

import numpy as np
import pytest

from cuplug import cumath
from cuplug._array.math import kernel_for
from cuplug._codegen import ops
from cuplug._codegen.elementwise import Layout

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
        return ops.loops(fn, operands_for(fn, dtype))
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
                ops.loops(fn, operands_for(fn, dtype))
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
    assert ops.loops(atan2, [f32, f64])[1] == (f64,)
    assert ops.loops(atan2, [f32, 2.0])[1] == (f32,)  # a Python float is weak
    assert ops.loops(atan2, [np.dtype(np.int8), np.dtype(np.int8)])[1] == (np.dtype(np.float16),)
    sin = cumath.function("sin")
    assert ops.loops(sin, [np.dtype(np.int32)])[1] == (f64,)
    assert ops.loops(sin, [np.dtype(np.int16)])[1] == (f32,)
    # PyCUDA's ldexp took float exponents; they are truncated to int.
    assert ops.loops(cumath.function("ldexp"), [f32, f32])[1] == (f32,)
    # frexp's exponents are int32, as NumPy's.
    assert ops.loops(cumath.function("frexp"), [f64])[1] == (f64, np.dtype(np.int32))


# {{{ one kernel per operation


SPELLINGS = [
    (name, row)
    for row in cumath.FUNCTIONS
    for name in dict.fromkeys((row.name, *row.aliases, row.numpy))
    if name != row.name
]


@pytest.mark.parametrize("name, row", SPELLINGS, ids=[n for n, _ in SPELLINGS])
def test_every_spelling_of_a_function_is_its_rows_kernel(name, row):
    """cumath.arcsin, cumath.asin and the ufunc name "arcsin" given to the dispatcher resolve
    one row and make one kernel (the same object, so one compile per dtype combination)."""
    for dtype in ALL:
        types = operands_for(row, dtype)
        if supported(row, dtype) is None:
            continue
        assert kernel_for(name, types) is kernel_for(row.name, types), (name, dtype)


@pytest.mark.parametrize("name", ["power", "rint", "fmin", "fmax", "absolute", "maximum"])
def test_operator_and_cumath_spellings_share_the_table_row(name):
    """The operators, gpuarray's functions and cumath read one table: power, rint, fmin and fmax
    (once spelled twice, with different kernels) are one row, built by the operators'
    expression builder; names cumath lacks (absolute, maximum) are no cumath function."""
    row = ops.lookup(name)
    assert ops.OPS[name] is row and row.build is not None
    assert (name in cumath.__all__) == row.cumath
    if row.cumath:
        assert cumath.function(name) is row
    f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    for types in ([f32] * row.nin, [i32] * row.nin, [f32, float][: row.nin]):
        kernel = kernel_for(name, types)
        assert kernel.name.startswith(f"cuplug_{name}_")
        assert kernel.args[0].name == "z"


def test_integer_power_is_numpys_whichever_the_spelling():
    """x ** y and cumath.power(x, y) over integers: the operators' helper (NumPy's wrapping
    power, 0 for negative exponents of bases other than 1 and -1) in both."""
    i32 = np.dtype(np.int32)
    src, _ = kernel_for("power", [i32, i32]).source(Layout("ccc"))
    assert "CUPLUG_HELPER_POW_INT" in src and "cuplug_ipow(" in src


def test_table_rows_are_named_once():
    names = [n for row in ops.TABLE for n in (row.name, *row.aliases)]
    assert len(names) == len(set(names))


# }}}

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
                scalar = layout.classes.endswith("s")  # the second operand a Python float
                kernel = kernel_for(fn.name, ops[:1] + [float] if scalar else ops)
                src, entry = kernel.source(layout)
                out.append((entry, loop, src))
    return out


def compile_ptx(sources):
    from support.compile_sources import builtin_options

    from cuplug.compiler import compile

    source = "\n".join(sources)
    try:
        return compile(
            source,
            arch="compute_90",
            target="ptx",
            backend="nvrtc",
            no_extern_c=True,
            cache_dir=False,
            options=builtin_options(source),
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


def test_calls_without_an_array_are_refused_before_the_dispatcher():
    with pytest.raises(TypeError, match="needs a GPUArray operand"):
        cumath.sin(np.ones(3))
    with pytest.raises(TypeError, match="needs a GPUArray operand"):
        cumath.hypot(3.0, np.float32(4.0))
    with pytest.raises(TypeError, match="needs a GPUArray operand"):
        cumath.exp([1.0])
