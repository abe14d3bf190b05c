"""GPU: every elementwise operation of GPUArray against NumPy, over every dtype pair for the
central operations, every dtype for all of them, and every layout (contiguous, F-order,
strided, negative strides, transposed, broadcast rows and columns, 0-d, empty)."""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
from support.array_gpu import DTYPES, LAYOUTS, check, make, values

import cuplug.gpuarray as gpuarray

pytestmark = [pytest.mark.gpu, pytest.mark.real_gpu]

# name -> (python operator or gpuarray function, numpy function, value kind of the 2nd operand)
BINARY = {
    "add": (operator.add, np.add, "general"),
    "subtract": (operator.sub, np.subtract, "general"),
    "multiply": (operator.mul, np.multiply, "general"),
    "true_divide": (operator.truediv, np.true_divide, "divisor"),
    "floor_divide": (operator.floordiv, np.floor_divide, "divisor"),
    "remainder": (operator.mod, np.remainder, "divisor"),
    "power": (operator.pow, np.power, "exponent"),
    "bitwise_and": (operator.and_, np.bitwise_and, "general"),
    "bitwise_or": (operator.or_, np.bitwise_or, "general"),
    "bitwise_xor": (operator.xor, np.bitwise_xor, "general"),
    "left_shift": (operator.lshift, np.left_shift, "shift"),
    "right_shift": (operator.rshift, np.right_shift, "shift"),
    "equal": (operator.eq, np.equal, "general"),
    "not_equal": (operator.ne, np.not_equal, "general"),
    "less": (operator.lt, np.less, "general"),
    "less_equal": (operator.le, np.less_equal, "general"),
    "greater": (operator.gt, np.greater, "general"),
    "greater_equal": (operator.ge, np.greater_equal, "general"),
    "maximum": (gpuarray.maximum, np.maximum, "special"),
    "minimum": (gpuarray.minimum, np.minimum, "special"),
    "logical_and": (gpuarray.logical_and, np.logical_and, "general"),
    "logical_or": (gpuarray.logical_or, np.logical_or, "general"),
    "logical_xor": (gpuarray.logical_xor, np.logical_xor, "general"),
}

UNARY = {
    "negative": (operator.neg, np.negative),
    "absolute": (abs, np.absolute),
    "invert": (operator.invert, np.invert),
    "logical_not": (gpuarray.logical_not, np.logical_not),
    "isnan": (lambda x: gpuarray._core_array.apply("isnan", (x,)), np.isnan),
    "isinf": (lambda x: gpuarray._core_array.apply("isinf", (x,)), np.isinf),
    "isfinite": (lambda x: gpuarray._core_array.apply("isfinite", (x,)), np.isfinite),
    "sign": (lambda x: gpuarray._core_array.apply("sign", (x,)), np.sign),
    "conjugate": (lambda x: gpuarray._core_array.apply("conjugate", (x,)), np.conjugate),
    "conj_method": (lambda x: x.conj(), lambda h: h.conj()),
}


@pytest.fixture(scope="module", autouse=True)
def _context(gpu_ctx):
    yield gpu_ctx


def numpy_or_error(fn, *args):
    with np.errstate(all="ignore"):
        try:
            return fn(*args)
        except (TypeError, OverflowError, ValueError) as e:
            return TypeError if isinstance(e, TypeError) else type(e)


def run_binary(name, x_host, x, y_host, y, what):
    op, ref, _ = BINARY[name]
    want = numpy_or_error(ref, x_host, y_host)
    if want is ValueError and name == "power":
        # NumPy refuses negative integer exponents by value; a kernel cannot raise, so array
        # exponents are compared where NumPy defines the result (docs/compat.md).
        y_host = np.where(y_host < 0, 0, y_host).astype(y_host.dtype)
        y = gpuarray.to_gpu(y_host)
        want = numpy_or_error(ref, x_host, y_host)
    if isinstance(want, type):
        with pytest.raises(want):
            op(x, y)
        return
    check(op(x, y), want, what=what)


def operands(name, dx, dy, layout, seed):
    rng = np.random.default_rng(seed)
    kind = BINARY[name][2]
    hx, gx = make(
        values(dx, (10, 74), rng, "special" if kind == "special" else "general"), layout, "x"
    )
    hy, gy = make(values(dy, (10, 74), rng, kind), layout, "y")
    return hx, gx, hy, gy


@pytest.mark.sweep
@pytest.mark.parametrize("name", ["add", "multiply", "true_divide", "less", "maximum"])
def test_central_operations_over_every_dtype_pair(name):
    for k, (dx, dy) in enumerate(itertools.product(DTYPES, DTYPES)):
        hx, gx, hy, gy = operands(name, dx, dy, "contiguous", k)
        run_binary(name, hx, gx, hy, gy, f"{name}({dx}, {dy})")


@pytest.mark.sweep
@pytest.mark.parametrize("name", sorted(BINARY))
def test_every_operation_over_every_dtype(name):
    for k, dt in enumerate(DTYPES):
        layout = LAYOUTS[k % len(LAYOUTS)]
        hx, gx, hy, gy = operands(name, dt, dt, layout, k)
        run_binary(name, hx, gx, hy, gy, f"{name}({dt}, {dt}) {layout}")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, pytest.param(np.int32, marks=pytest.mark.sweep)])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_every_operation_over_every_layout(name, dtype, layout):
    hx, gx, hy, gy = operands(name, dtype, dtype, layout, 1)
    run_binary(name, hx, gx, hy, gy, f"{name} {layout}")
    # The operands the other way round (broadcasting on the left).
    run_binary(name, hy, gy, hx, gx, f"{name} {layout} reversed")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "dtype", [np.float16, np.complex64, np.int8, np.bool_, np.uint64, np.float64, np.complex128]
)
def test_layouts_of_other_dtypes(dtype, layout):
    for name in ("add", "multiply", "maximum", "equal"):
        hx, gx, hy, gy = operands(name, dtype, dtype, layout, 2)
        run_binary(name, hx, gx, hy, gy, f"{name} {np.dtype(dtype)} {layout}")


@pytest.mark.sweep
@pytest.mark.parametrize("dtype", DTYPES)
def test_python_and_numpy_scalars_on_either_side(dtype):
    rng = np.random.default_rng(3)
    hx, gx = make(values(dtype, (10, 74), rng), "strided", "x")
    scalars = [
        True,
        3,
        -2,
        2.5,
        1.5 - 2j,
        np.float32(1.25),
        np.int8(3),
        np.uint16(7),
        np.complex64(1 + 1j),
        np.float16(0.5),
    ]
    for name in (
        "add",
        "subtract",
        "multiply",
        "true_divide",
        "less",
        "maximum",
        "power",
        "floor_divide",
    ):
        op, ref, _ = BINARY[name]
        for s in scalars:
            for left in (False, True):
                args_h = (s, hx) if left else (hx, s)
                args_g = (s, gx) if left else (gx, s)
                want = numpy_or_error(ref, *args_h)
                what = f"{name}{'(s, x)' if left else '(x, s)'} {np.dtype(dtype)} {s!r}"
                if want is ValueError and left:
                    continue  # negative integer exponents in an array: see run_binary
                if isinstance(want, type):
                    with pytest.raises(want):
                        op(*args_g)
                    continue
                check(op(*args_g), want, what=what)


def test_comparisons_with_python_ints_out_of_range():
    x = gpuarray.to_gpu(np.array([-3, 0, 5], np.int8))
    hx = x.get()
    for big in (1000, -1000, 2**70):
        for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
            op, ref, _ = BINARY[name]
            check(op(x, big), ref(hx, big), what=f"{name}(int8, {big})")
            check(op(big, x), ref(big, hx), what=f"{name}({big}, int8)")
    with pytest.raises(OverflowError):
        x + 1000


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_operations_over_every_dtype_and_layout(name):
    op, ref = UNARY[name]
    rng = np.random.default_rng(4)
    for dt in DTYPES:
        for layout in ("contiguous", "negative", "transposed", "zero_d", "empty"):
            kind = "special" if dt.kind == "f" else "general"
            hx, gx = make(values(dt, (10, 74), rng, kind), layout, "y")
            want = numpy_or_error(ref, hx)
            if isinstance(want, type):
                with pytest.raises(TypeError):
                    op(gx)
                continue
            check(op(gx), want, what=f"{name} {dt} {layout}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_inplace_operators(dtype):
    rng = np.random.default_rng(5)
    for name, iop in (
        ("add", operator.iadd),
        ("subtract", operator.isub),
        ("multiply", operator.imul),
        ("true_divide", operator.itruediv),
        ("floor_divide", operator.ifloordiv),
        ("bitwise_or", operator.ior),
        ("left_shift", operator.ilshift),
    ):
        for other_dtype in (dtype, np.dtype(np.float64), np.dtype(np.int8)):
            for layout in ("contiguous", "negative", "broadcast_row"):
                kind = BINARY[name][2]
                hx, gx = make(values(dtype, (10, 74), rng), layout, "x")
                hy, gy = make(values(other_dtype, (10, 74), rng, kind), layout, "y")
                hx, gx = hx.copy(), gx.copy()
                want = numpy_or_error(iop, hx, hy)
                if isinstance(want, type):
                    with pytest.raises(want):
                        iop(gx, gy)
                    continue
                ptr = gx.ptr
                result = iop(gx, gy)
                assert result is gx and gx.ptr == ptr
                check(gx, want, what=f"{name}= {dtype} {other_dtype} {layout}")


def test_inplace_with_overlapping_views_matches_numpy():
    h = np.arange(20, dtype=np.float32)
    g = gpuarray.to_gpu(h)
    h[1:] += h[:-1]
    g[1:] += g[:-1]
    check(g, h)
    h2 = np.arange(16, dtype=np.int32)
    g2 = gpuarray.to_gpu(h2)
    h2 += h2[::-1]
    g2 += g2[::-1]
    check(g2, h2)


def test_divmod_and_reflected_operators():
    rng = np.random.default_rng(6)
    for dt in (np.int16, np.uint32, np.float32, np.float64):
        hx = values(dt, (50,), rng)
        hy = values(dt, (50,), rng, "divisor")
        gx, gy = gpuarray.to_gpu(hx), gpuarray.to_gpu(hy)
        q, r = divmod(gx, gy)
        with np.errstate(all="ignore"):
            wq, wr = divmod(hx, hy)
            check(q, wq)
            check(r, wr)
            check(7 - gx, 7 - hx)
            check(3 / gy, 3 / hy)
            check(3 // gy, 3 // hy)
            e = values(dt, (50,), rng, "exponent")
            check(2 ** gpuarray.to_gpu(e), 2**e)


def test_large_contiguous_operands_cover_the_grid_stride_loop():
    rng = np.random.default_rng(7)
    n = 3_000_017
    for dt in (np.float32, np.int8, np.float16, np.complex128):
        hx = values(dt, (n,), rng)
        hy = values(dt, (n,), rng)
        gx, gy = gpuarray.to_gpu(hx), gpuarray.to_gpu(hy)
        with np.errstate(all="ignore"):
            check(gx + gy, hx + hy)
            check(gx * 2, hx * 2)
            check(gx[1:] - gy[:-1], hx[1:] - hy[:-1])  # misaligned: no vector loads
            check(gx[::3] * gy[::3], hx[::3] * hy[::3])


def test_higher_dimensional_broadcasting():
    rng = np.random.default_rng(8)
    shapes = [
        ((2, 1, 4, 1, 3), (4, 5, 1)),
        ((3, 1), (1, 4, 1, 5)),
        ((6, 1, 7), (6, 5, 1)),
        ((1,), (2, 3, 4, 5, 6, 2, 3)),
    ]
    for sa, sb in shapes:
        for dt in (np.float32, np.int64, np.complex64):
            ha, hb = values(dt, sa, rng), values(dt, sb, rng)
            check(gpuarray.to_gpu(ha) * gpuarray.to_gpu(hb), ha * hb, what=f"{sa} {sb}")
            check(
                gpuarray.to_gpu(hb) - gpuarray.to_gpu(ha)[..., ::-1],
                hb - ha[..., ::-1],
                what=f"{sb} {sa} reversed",
            )
