"""Scans (cuplug.scan, gpuarray.cumsum/cumprod) without a GPU: the generated kernels compile to
PTX for every dtype and scan kind, NumPy's result dtypes and axes, the launches the fake driver
records (grid, steps, row lengths), and errors that name the problem. What the kernels compute
is checked on a CPU emulation (test_scan_emulated.py) and on the GPU (test_scan_gpu.py)."""

from __future__ import annotations

import struct
import warnings

import numpy as np
import pytest
from support.dtype_matrix import ARRAY_DTYPES

import cuplug.gpuarray as gpuarray
from cuplug import scan
from cuplug._array import cumulative
from cuplug._codegen import scan as sg

NUMERIC = [np.dtype(d) for d in ARRAY_DTYPES]


def _nvrtc():
    from cuplug import _core

    try:
        _core._compiler.compiler_info("nvrtc", {})
    except Exception as e:  # pragma: no cover - only without the plugin
        pytest.skip(f"the nvrtc compiler backend is not available: {e}")


def _ptx(source):
    from cuplug import compiler
    from cuplug._kernels.scan import _options

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a compiler warning is a failure too
        ptx = compiler.compile(
            source,
            target="ptx",
            arch="sm_90",
            no_extern_c=True,
            cache_dir=False,
            options=_options(None, source, builtin=True),
        )
    assert b".entry" in ptx
    return ptx


# ---- code generation ------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["sum", "prod"])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_cumulative_kernels_compile_for_every_dtype(op, dtype):
    _nvrtc()
    result = cumulative.cumulative_dtype(op, dtype)
    wide = np.dtype(np.complex128 if dtype.kind == "c" else np.float64)  # out= of another dtype
    for segmented, out in ((False, result), (True, result), (False, wide)):
        s = cumulative.array_scan_for(op, dtype, result, out, segmented)
        ptx = _ptx(s.source)
        assert s.gen.name.encode() in ptx


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_pycuda_scan_kernels_compile_for_every_dtype(exclusive, dtype):
    _nvrtc()
    acc = np.dtype(np.float32) if dtype == np.float16 else dtype
    gen = sg.generate_array_scan(
        f"scan_{sg._dtypes.tag(dtype)}",
        dtype,
        acc,
        dtype,
        "a || b" if dtype.kind == "b" else "a+b",
        neutral="0" if exclusive else None,
        exclusive=exclusive,
    )
    _ptx(gen.source)


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.complex64, np.int8], ids=str)
@pytest.mark.parametrize("segmented", [False, True])
def test_generic_scans_compile(dtype, segmented):
    _nvrtc()
    dtype = np.dtype(dtype)
    args = [
        sg.Arg("x", dtype, True),
        sg.Arg("seg", np.dtype(np.uint8), True),
        sg.Arg("out", dtype, True),
        sg.Arg("k", np.dtype(np.int32), False),
    ]
    gen = sg.generate_generic_scan(
        "g",
        args,
        dtype,
        "x[i] * (scan_type)k",
        "across_seg_boundary ? b : a + b",
        "0",
        "out[i] = item - prev_item; if (i == N - 1) out[0] = last_item;",
        is_segment_start_expr="seg[i] != 0 || prev_seg == 2" if segmented else None,
        input_fetch_exprs=[("prev_seg", "seg", -1)],
    )
    assert gen.flags == segmented
    ptx = _ptx(gen.source)
    assert b"g_scan" in ptx and b"g_output" in ptx


def test_custom_struct_types_scan_through_the_registry():
    _nvrtc()
    from cuplug.tools import get_or_register_dtype

    pair = np.dtype([("lo", np.int32), ("hi", np.float32)])
    get_or_register_dtype("cuplug_test_pair", pair)
    preamble = """
struct cuplug_test_pair { int lo; float hi; };
__device__ cuplug_test_pair pair_op(cuplug_test_pair a, cuplug_test_pair b)
{ cuplug_test_pair r; r.lo = a.lo + b.lo; r.hi = a.hi > b.hi ? a.hi : b.hi; return r; }
"""
    gen = sg.generate_array_scan("pairs", pair, pair, pair, "pair_op(a, b)", preamble=preamble)
    assert gen.vector  # 8 bytes: two to a 16-byte load
    _ptx(gen.source)
    triple = np.dtype([("a", np.int32), ("b", np.int32), ("c", np.int32)])
    get_or_register_dtype("cuplug_test_triple", triple)
    preamble = "struct cuplug_test_triple { int a, b, c; };\n"
    op = "cuplug_test_triple{a.a + b.a, a.b + b.b, a.c + b.c}"
    gen = sg.generate_array_scan("triples", triple, triple, triple, op, preamble=preamble)
    assert not gen.vector  # 12 bytes: loaded one by one
    _ptx(gen.source)


def test_tuning_keeps_chunks_whole_and_loads_16_bytes():
    for acc in (1, 2, 4, 8, 16, 24, 32):
        for io in (None, 1, 2, 4, 8, 16):
            t = sg.tuning_for(acc, io)
            assert t.items % t.vec == 0 and t.vec & (t.vec - 1) == 0
            if io is not None:
                assert t.vec * io <= 16 or t.vec == 1
    assert sg.tuning_for(4, 4) == sg.Tuning(block=1024, items=32, vec=4)
    assert sg.tuning_for(8, 8) == sg.Tuning(block=512, items=24, vec=2)
    assert sg.tuning_for(4, 4, {"block": 256, "items": 8}).tile == 2048
    with pytest.raises(ValueError, match="multiple of vec"):
        sg.Tuning(items=6, vec=4)


@pytest.mark.parametrize("tiles", [2, 31, 32, 33, 1000, 2**20 + 7])
def test_scratch_holds_every_channel(tiles):
    groups = -(-tiles // sg.GROUP)
    words = sg.value_words(8, True)
    assert sg.scratch_zero_bytes(tiles) == 16 + 8 * (tiles + 2 * groups)
    assert sg.scratch_bytes(tiles, words) == sg.scratch_zero_bytes(tiles) + 4 * words * (
        tiles + 2 * groups
    )
    assert sg.scratch_zero_bytes(tiles) % 4 == 0  # cleared with memset_d32


# ---- NumPy's semantics, as pure functions ----------------------------------------------------


@pytest.mark.parametrize("op", ["sum", "prod"])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_result_dtypes_are_numpys(op, dtype):
    func = np.cumsum if op == "sum" else np.cumprod
    assert cumulative.cumulative_dtype(op, dtype) == func(np.zeros(3, dtype)).dtype
    for requested in (np.int8, np.float32, np.complex128, np.bool_):
        assert cumulative.cumulative_dtype(op, dtype, requested) == np.dtype(requested)
    acc = cumulative.accumulator_dtype(cumulative.cumulative_dtype(op, dtype))
    assert acc == (np.float32 if dtype == np.float16 else func(np.zeros(3, dtype)).dtype)


def test_axes_normalize_like_numpy():
    assert cumulative.normalize_axis(-1, 3) == 2
    assert cumulative.normalize_axis(np.int64(1), 2) == 1
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds"):
        cumulative.normalize_axis(3, 3)
    with pytest.raises(np.exceptions.AxisError):
        cumulative.normalize_axis(-3, 2)
    with pytest.raises(TypeError, match="axis must be an integer"):
        cumulative.normalize_axis(1.0, 2)


# ---- launches (the fake driver records them) --------------------------------------------------


def _params(launch, fmt):
    """The launch's parameters decoded by a prepared-call format (CUDA's natural alignment)."""
    codes = {"P": "Q", "q": "q", "Q": "Q", "i": "i"}
    out, offset = [], 0
    for c in fmt:
        size = struct.calcsize(codes[c])
        offset = -(-offset // size) * size
        out.append(struct.unpack_from(codes[c], launch.params, offset)[0])
        offset += size
    return out


@pytest.mark.gpu
def test_small_scans_run_in_one_block_large_ones_in_a_block_per_tile(ctx, fake):
    k = scan.InclusiveScanKernel(np.float32, "a+b")
    tile = k._scan.gen.tuning.tile
    x = gpuarray.zeros((tile * 3 + 5,), np.float32)
    fake.clear_launches()
    k(x)
    launch = fake.last_launch()
    assert launch.grid[0] == 1 and launch.block[0] == k._scan.gen.tuning.block
    in_ptr, in_step, out_ptr, out_step, vec_ok, n, state = _params(launch, "PqPqiQP")
    assert (in_ptr, in_step, out_ptr, out_step, n, state) == (x.ptr, 1, x.ptr, 1, x.size, 0)
    assert vec_ok == 1
    big = gpuarray.zeros((tile * 40 + 1,), np.float32)
    k(big[::-1], "new")
    launch = fake.last_launch()
    assert launch.grid[0] == 41
    in_ptr, in_step, out_ptr, out_step, vec_ok, n, state = _params(launch, "PqPqiQP")
    assert (in_ptr, in_step, vec_ok, n) == (big[::-1].ptr, -1, 0, big.size)
    assert state != 0


@pytest.mark.gpu
def test_cumsum_along_rows_and_columns_launches_row_scans(ctx, fake):
    a = gpuarray.zeros((30, 40), np.int16)
    fake.clear_launches()
    r = gpuarray.cumsum(a, axis=1)
    assert r.dtype == np.int64 and r.shape == (30, 40)
    launch = fake.last_launch()
    assert "cumsum_i2_i8_i8_rows" in launch.function
    _, in_step, out_ptr, out_step, row, _, n, _ = _params(launch, "PqPqQiQP")
    assert (in_step, out_ptr, out_step, row, n) == (1, r.ptr, 1, 40, 1200)
    # Along axis 0: rows of 30 after moving the axis last (a copy), then copied back.
    r0 = gpuarray.cumprod(a, axis=0)
    assert r0.shape == (30, 40) and r0.flags.c_contiguous
    names = [fake.launch(k).function for k in range(fake.launch_count())]
    assert any("cumprod_i2_i8_i8_rows" in name for name in names)
    # One row: no restarts needed.
    fake.clear_launches()
    gpuarray.cumsum(gpuarray.zeros((1, 50), np.float32), axis=1)
    assert fake.last_launch().function.endswith("cumsum_f4_f4_f4")


@pytest.mark.gpu
def test_cumsum_of_strided_and_flattened_arrays(ctx, fake):
    a = gpuarray.zeros((1000,), np.float64)
    fake.clear_launches()
    r = gpuarray.cumsum(a[::-3])
    assert r.shape == (334,) and r.dtype == np.float64
    _, in_step, _, out_step, _, n, _ = _params(fake.last_launch(), "PqPqiQP")
    assert (in_step, out_step, n) == (-3, 1, 334)
    b = gpuarray.zeros((2000,), np.float64)
    out = gpuarray.zeros((2000,), np.float32)
    assert gpuarray.cumsum(b[::3][:666], out=out[::3][:666]) is not None
    _, _, out_ptr, out_step, _, n, _ = _params(fake.last_launch(), "PqPqiQP")
    assert (out_ptr, out_step, n) == (out.ptr, 3, 666)
    m = gpuarray.zeros((4, 5, 6), np.uint8)
    f = gpuarray.cumsum(m, axis=None)
    assert f.shape == (120,) and f.dtype == np.uint64
    assert gpuarray.cumsum(gpuarray.zeros((), np.int32)).shape == (1,)
    assert gpuarray.cumsum(gpuarray.zeros((0, 3), np.int32), axis=1).shape == (0, 3)
    assert gpuarray.cumprod(m[:, ::2, ::-1], axis=2, dtype=np.float32).dtype == np.float32


@pytest.mark.gpu
def test_cumsum_accumulates_in_the_result_dtype_then_casts_into_out(ctx, fake):
    """NumPy's order: cumsum(int8, dtype=int8, out=float32) wraps in int8, then converts."""
    a = gpuarray.zeros((100,), np.int8)
    fake.clear_launches()
    gpuarray.cumsum(a, dtype=np.int8, out=gpuarray.zeros((100,), np.float32))
    assert fake.last_launch().function == "cuplug_cumsum_i1_i1_f4"
    gpuarray.cumsum(a, out=gpuarray.zeros((100,), np.float32))  # int64 sums, then float32
    assert fake.last_launch().function == "cuplug_cumsum_i1_i8_f4"
    gpuarray.cumsum(gpuarray.zeros((100,), np.float16))
    assert fake.last_launch().function == "cuplug_cumsum_f2_f4_f2"


@pytest.mark.gpu
def test_generic_scan_launches_the_scan_then_the_output(ctx, fake):
    g = scan.GenericScanKernel(
        np.int32,
        arguments="__global int *ary, int k",
        input_expr="ary[i] * k",
        scan_expr="a+b",
        neutral="0",
        output_statement="ary[i+1] = item;",
    )
    x = gpuarray.zeros((10000,), np.int32)
    fake.clear_launches()
    assert g(x, 3, size=x.size - 1) is None
    scan_launch, out_launch = fake.launch(1), fake.launch(0)
    assert scan_launch.function == "scan_scan" and out_launch.function == "scan_output"
    ary, k, tmp, flags, n, _ = _params(scan_launch, "PiPPQP")
    assert (ary, k, n, flags) == (x.ptr, 3, 9999, 0)
    assert _params(out_launch, "PiPPQ")[2:] == [tmp, 0, 9999]


# ---- errors that name the problem --------------------------------------------------------------


@pytest.mark.gpu
def test_scan_kernel_errors_name_the_problem(ctx):
    with pytest.raises(ValueError, match="neutral element is required"):
        scan.ExclusiveScanKernel(np.int32, "a+b")
    with pytest.raises(TypeError, match="no C type for dtype"):
        scan.InclusiveScanKernel(np.dtype([("a", np.int8), ("b", np.int16)]), "a")
    with pytest.raises(ValueError, match="not a C name"):
        scan.InclusiveScanKernel(np.int32, "a+b", name_prefix="my scan")
    from cuplug.driver import CompileError

    with pytest.raises(CompileError):
        scan.InclusiveScanKernel(np.int32, "a+")
    k = scan.InclusiveScanKernel(np.int32, "a+b")
    x = gpuarray.zeros((100,), np.int32)
    with pytest.raises(TypeError, match="input_ary has dtype float32, the kernel scans int32"):
        k(gpuarray.zeros((100,), np.float32))
    with pytest.raises(TypeError, match="output_ary has dtype int64"):
        k(x, gpuarray.zeros((100,), np.int64))
    with pytest.raises(ValueError, match="same shape"):
        k(x, gpuarray.zeros((99,), np.int32))
    with pytest.raises(ValueError, match="scans 1-d arrays"):
        k(gpuarray.zeros((10, 10), np.int32))
    with pytest.raises(ValueError, match="'new'"):
        k(x, "old")
    with pytest.raises(TypeError, match="must be a GPUArray"):
        k(np.zeros(100, np.int32))
    assert k(gpuarray.zeros((0,), np.int32), "new").shape == (0,)


@pytest.mark.gpu
def test_generic_scan_errors_name_the_problem(ctx):
    kw = dict(input_expr="x[i]", scan_expr="a+b", output_statement="x[i] = item;")
    with pytest.raises(ValueError, match="must provide a 'neutral'"):
        scan.GenericScanKernel(np.int32, "int *x", neutral=None, **kw)
    with pytest.raises(ValueError, match="at least one vector"):
        scan.GenericScanKernel(np.int32, "int x", neutral="0", **kw)
    with pytest.raises(TypeError, match="index_dtype must be a signed"):
        scan.GenericScanKernel(np.int32, "int *x", neutral="0", index_dtype=np.uint32, **kw)
    with pytest.raises(ValueError, match="offset of 'p' must be 0 or -1"):
        scan.GenericScanKernel(
            np.int32, "int *x", neutral="0", input_fetch_exprs=[("p", "x", 1)], **kw
        )
    with pytest.raises(ValueError, match="'n' is taken|taken by the generated kernel"):
        scan.GenericScanKernel(np.int32, "int *x, int item", neutral="0", **kw)
    g = scan.GenericScanKernel(np.int32, "int *x", neutral="0", index_dtype=np.int32, **kw)
    with pytest.raises(TypeError, match="takes 1 arguments"):
        g()
    with pytest.raises(ValueError, match="do not fit index_dtype int32"):
        g(gpuarray.zeros((10,), np.int32), size=2**31)
    with pytest.raises(TypeError, match="must be a GPUArray or a device pointer"):
        g(None)


@pytest.mark.gpu
def test_cumulative_errors_name_the_problem(ctx):
    a = gpuarray.zeros((3, 4), np.float32)
    with pytest.raises(np.exceptions.AxisError):
        gpuarray.cumsum(a, axis=2)
    with pytest.raises(ValueError, match=r"out has shape \(3, 3\), the result has shape \(3, 4\)"):
        gpuarray.cumsum(a, axis=1, out=gpuarray.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match=r"the result has shape \(12,\)"):
        gpuarray.cumsum(a, out=gpuarray.zeros((3, 4), np.float32))
    with pytest.raises(TypeError, match="out must be a GPUArray"):
        gpuarray.cumsum(a, out=np.zeros((12,), np.float32))
    with pytest.raises(TypeError, match="discard the imaginary parts"):
        gpuarray.cumsum(gpuarray.zeros((3,), np.complex64), dtype=np.float32)
    with pytest.raises(TypeError, match="cannot hold the complex result"):
        gpuarray.cumprod(gpuarray.zeros((3,), np.complex64), out=gpuarray.zeros((3,), np.float32))
    with pytest.raises(TypeError, match="a must be a GPUArray"):
        gpuarray.cumsum(np.zeros(3))
