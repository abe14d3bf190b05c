"""NumPy's reductions over axes (gpuarray.sum/prod/min/max/argmin/argmax/any/all/mean/var/std and
the nan forms) without a GPU: axis/keepdims/dtype/out resolution against NumPy for every dtype,
the generated kernels compile to PTX (NVRTC) for every reduction, dtype and entry, the plans
split work as designed, and against the fake driver: PyCUDA's positional forms, one launch for a
small sum, errors that name the problem. The kernels run on the host:
test_axis_reductions_emulated.py. Results on a GPU: test_axis_reductions_gpu.py."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from support.dtype_matrix import ARRAY_DTYPES
from support.reduction_reference import numpy_result

from cuplug._codegen import axis_reduction as ar
from cuplug._kernels import axis_reduction as axr
from cuplug._kernels import axis_reduction_plan as axp

DTYPES = [np.dtype(d) for d in ARRAY_DTYPES]
KINDS = ar.KINDS
TAKES_DTYPE = (
    "sum",
    "prod",
    "nansum",
    "nanprod",
    "mean",
    "nanmean",
    "var",
    "std",
    "nanvar",
    "nanstd",
)
NO_COMPLEX = ("min", "max", "nanmin", "nanmax", "argmin", "argmax")


# ---- resolution against NumPy (pure) -------------------------------------------------------------

AXES = [None, 0, 1, -1, 2, -3, 3, (0,), (0, 1), (1, 0), (0, -1), (), (0, 0), (0, 1, 2)]


@pytest.mark.parametrize("ndim", [0, 1, 2, 3])
@pytest.mark.parametrize("axis", AXES, ids=repr)
@pytest.mark.parametrize("kind", ["sum", "argmax", "mean", "var", "std", "nanmean"])
def test_axis_is_read_as_numpy_reads_it(kind, axis, ndim):
    x = np.zeros((2, 3, 4)[:ndim])
    want = numpy_result(kind, x, axis)
    if isinstance(want, Exception):
        with pytest.raises(type(want)):
            axp.normalize_axis(axis, ndim, kind)
        return
    axes = axp.normalize_axis(axis, ndim, kind)
    assert axp.result_shape(x.shape, axes, False) == want.shape
    assert axp.result_shape(x.shape, axes, True) == numpy_result(kind, x, axis, True).shape


def test_axis_errors_name_the_problem():
    with pytest.raises(axp.AxisError, match="axis 2 is out of bounds for array of dimension 2"):
        axp.normalize_axis(2, 2)
    assert issubclass(axp.AxisError, (IndexError, ValueError))  # numpy's AxisError
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        axp.normalize_axis((1, -1), 2)
    with pytest.raises(TypeError, match="axis must be None, an int or a tuple of ints, got float"):
        axp.normalize_axis(1.0, 2)
    with pytest.raises(TypeError, match="argmin: axis must be None or an int"):
        axp.normalize_axis((0,), 2, "argmin")
    assert axp.normalize_axis(np.int64(-1), 2) == (1,)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_result_dtypes_are_numpys(kind, dtype):
    x = np.ones((2, 3), dtype)
    for dtype_arg in [None, *(["float32", "int64", "complex128", "float16", "bool"]
                              if kind in TAKES_DTYPE else [])]:  # fmt: skip
        want = numpy_result(kind, x, 0, dtype=dtype_arg)
        if dtype.kind == "c" and kind in NO_COMPLEX:
            with pytest.raises(TypeError, match="complex"):
                axp.resolve_dtypes(kind, dtype, dtype_arg)
            continue
        if isinstance(want, Exception):
            with pytest.raises(TypeError):
                axp.resolve_dtypes(kind, dtype, dtype_arg)
            continue
        _, result = axp.resolve_dtypes(kind, dtype, dtype_arg)
        assert result == want.dtype, (kind, dtype, dtype_arg)


def test_out_dtype_follows_numpys_casting_rules():
    f8, c16 = np.dtype(np.float64), np.dtype(np.complex128)
    assert axp.resolve_dtypes("sum", f8, None, np.dtype(np.int8))[1] == f8  # stored cast, as NumPy
    with pytest.raises(TypeError, match="cannot store its float64 result in out= of dtype int64"):
        axp.resolve_dtypes("std", f8, None, np.dtype(np.int64))
    with pytest.raises(TypeError, match="cannot store its int64 result in out= of dtype float64"):
        axp.resolve_dtypes("argmax", f8, None, f8)
    with pytest.warns(getattr(np, "exceptions", np).ComplexWarning, match="keeps the real part"):
        axp.resolve_dtypes("mean", c16, None, f8)
    with pytest.raises(TypeError, match="out= of dtype datetime64.s. is not supported"):
        axp.resolve_dtypes("any", c16, None, np.dtype("datetime64[s]"))
    with pytest.raises(TypeError, match="not defined for dtype"):
        axp.resolve_dtypes("sum", np.dtype("datetime64[s]"))
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtype'"):
        axp.resolve_dtypes("max", f8, np.float32)


# ---- generated kernels compile (NVRTC, no device) ------------------------------------------------


def specs_for(dtype):
    """Every reduction's Spec over dtype, plus dtype= and out= casts that take other paths."""
    out = []
    for kind in KINDS:
        args = [None] + (["float16", "int8", "complex64", "bool"] if kind in TAKES_DTYPE else [])
        for dtype_arg in args:
            try:
                compute, result = axp.resolve_dtypes(kind, dtype, dtype_arg)
            except TypeError:
                continue
            out.append(ar.spec(kind, dtype, compute, result))
        if kind in ("sum", "argmin", "any", "mean", "var"):
            try:
                compute, result = axp.resolve_dtypes(kind, dtype)
            except TypeError:
                continue
            out.append(ar.spec(kind, dtype, compute, result, np.complex64))
    return list({sp.name: sp for sp in out}.values())


def rotated_entries(k):
    """Entries compiled for the k-th module of a program: all of them for every third, the
    others take turns (each dtype's program still has every entry of every reduction kind
    over its dtype= variants and the dtypes, at half the compile time)."""
    return ar.ENTRIES if k % 3 == 0 else (("rows", "colsa") if k % 3 == 1 else ("cols", "rowsa"))


def batched(specs, entries=rotated_entries):
    """One program of many modules: each in its own namespace (they share type names)."""
    heads, bodies = set(), []
    for i, sp in enumerate(specs):
        lines = ar.generate(sp, entries(i)).splitlines()
        heads.update(line for line in lines if line.startswith("#include"))
        body = "\n".join(line for line in lines if not line.startswith("#include"))
        bodies.append(f"namespace m{i} {{\n{body}\n}}")
    return "\n".join(sorted(heads, key=lambda h: "complex" in h)) + "\n" + "\n".join(bodies)


def nvrtc_ptx(source):
    from support.compile_sources import builtin_options

    from cuplug import _core, compiler

    try:
        _core._compiler.compiler_info("nvrtc", {})
    except Exception as e:  # pragma: no cover - only without the plugin
        pytest.skip(f"the nvrtc compiler backend is not available: {e}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a compiler warning is a failure too
        return compiler.compile(
            source,
            target="ptx",
            arch="sm_90",
            no_extern_c=True,
            cache_dir=False,
            options=builtin_options(source),
        )


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_reduction_compiles_for_every_dtype_and_entry(dtype):
    specs = specs_for(dtype)
    assert len(specs) >= (12 if dtype.kind == "c" else 18)
    ptx = nvrtc_ptx(batched(specs))
    for k, sp in enumerate(specs):
        for e in rotated_entries(k):
            assert f".entry {ar.entry(sp.name, e)}(".encode() in ptx
    # Every entry takes one parameter block of PARAMS' size, which the launches pack.
    assert f".b8 {ar.entry(specs[0].name, 'rows')}_param_0[{ar.PARAMS.size}]".encode() in ptx


def test_source_names_its_parts():
    f4 = np.dtype(np.float32)
    sp = ar.spec("sum", f4, f4, f4)
    src = ar.generate(sp, ("cols",))
    assert "cuplug_axis_sum_f4_f4_f4_f4_cols" in src and "_rows" not in src
    assert "typedef double acc_type;" in src  # float32 sums accumulate in double
    with pytest.raises(ValueError, match="unknown entry kind 'diagonal'"):
        ar.generate(sp, ("diagonal",))
    with pytest.raises(ValueError, match="unknown reduction 'median'"):
        ar.spec("median", f4, f4, f4)
    with pytest.raises(TypeError, match="complex"):
        ar.spec("max", np.complex64, np.complex64, np.complex64)


# ---- plans (pure) --------------------------------------------------------------------------------

H200_SMS = 132


def plan(shape, axis, itemsize=4, acc_size=8, strides=None, sms=H200_SMS, ptr_mod=0, out=None):
    strides = strides if strides is not None else [
        int(np.prod(shape[k + 1 :])) for k in range(len(shape))
    ]  # fmt: skip
    axes = axp.normalize_axis(axis, len(shape))
    kept = [n for k, n in enumerate(shape) if k not in axes]
    outs = out if out is not None else [int(np.prod(kept[k + 1 :])) for k in range(len(kept))]
    return axp.plan_launches(shape, strides, axes, itemsize, acc_size, outs, sms, ptr_mod)


def test_sum_over_rows_of_a_16k_square_reads_columns_coalesced_with_vector_loads():
    launches, temps, _, _ = plan((16384, 16384), 0)
    first, combine = launches
    p = first.params
    assert first.kind == "cols" and p["vec"] == 1 and p["group"] == 4
    # Enough threads for the whole GPU: the rows are split, partials [split][column].
    assert p["splits"] * 16384 // 4 >= H200_SMS * axp.THREADS_PER_SM // 2 * 0.9
    assert combine.kind == "colsa" and combine.params["n"] == p["splits"]
    assert combine.params["final"] == 1 and p["final"] == 0
    # The partial values cost under 1% of the input's traffic.
    assert temps == [p["splits"] * 16384 * 8] and temps[0] < 0.01 * 16384**2 * 4


def test_sum_over_columns_of_a_16k_square_is_one_block_per_row():
    launches, temps, _, _ = plan((16384, 16384), 1)
    (only,) = launches
    p = only.params
    assert only.kind == "rows" and p["group"] == 256 and p["vec"] == 1 and p["splits"] == 1
    assert only.grid == 16384 and temps == []


@pytest.mark.parametrize("n", [1, 1000, 4096])
def test_a_small_whole_array_sum_is_one_launch(n):
    launches, temps, _, _ = plan((n,), None)
    assert len(launches) == 1 and temps == [] and launches[0].grid == 1


def test_a_large_whole_array_sum_splits_then_combines():
    launches, temps, _, _ = plan((1 << 28,), None)
    first, combine = launches
    assert first.kind == "rows" and first.params["splits"] > H200_SMS
    assert combine.kind == "rowsa" and combine.params["m"] == 1 and combine.grid == 1


def test_plans_are_functions_of_shape_and_device_only():
    a = plan((1000, 3, 777), (0, 2))
    b = plan((1000, 3, 777), (0, 2))
    assert [(L.kind, L.grid, L.fields) for L in a[0]] == [(L.kind, L.grid, L.fields) for L in b[0]]


def test_unaligned_or_strided_inputs_load_element_by_element():
    assert plan((1000, 64), 1, ptr_mod=4)[0][0].params["vec"] == 0
    assert plan((1000, 64), 1, strides=[128, 2])[0][0].params["vec"] == 0
    assert plan((1000, 64), 1)[0][0].params["vec"] == 1


def test_reversed_axes_are_walked_forwards():
    launches, _, in_off, out_off = plan((10, 20), 1, strides=[-20, -1], out=[-1])
    assert in_off == -199 and out_off == -9
    p = launches[0].params
    assert p["s_red"] == 1 and p["in_s"] == (20,) and p["out_s"] == (1,)


def test_grids_fit_the_hardware_for_outputs_past_2_to_the_32():
    launches, _, _, _ = plan((2**33, 2), 1, itemsize=1)
    for L in launches:
        assert 1 <= L.grid < 2**31


# ---- the API against the fake driver (launches recorded, kernels not run) ---------------------


def fields(launch):
    """A recorded launch's parameter block by name."""
    v = ar.PARAMS.unpack(launch.params)
    names = ("out", "in", "m", "n", "s_red", "chunk", "splits", "denom", "nd", "final", "vec")
    return dict(zip(names, v))


@pytest.mark.gpu
def test_a_small_sum_is_one_launch_into_a_0d_result(env):
    gpuarray, fake = env
    x = gpuarray.zeros((1000,), np.float32)
    fake.clear_launches()
    r = gpuarray.sum(x)
    assert r.shape == () and r.dtype == np.float32
    assert fake.launch_count() == 1
    launch = fake.last_launch()
    assert launch.function == "cuplug_axis_sum_f4_f4_f4_f4_rows"
    assert launch.grid == (1, 1, 1) and launch.block == (256, 1, 1)
    f = fields(launch)
    assert (f["out"], f["in"], f["m"], f["n"], f["final"]) == (r.ptr, x.ptr, 1, 1000, 1)
    fake.clear_launches()
    x.sum()  # the cached plan: still one launch, nothing compiled
    assert fake.launch_count() == 1


@pytest.mark.gpu
def test_pycuda_positional_forms_still_work(env):
    gpuarray, fake = env
    x = gpuarray.zeros((100,), np.int8)
    s = drv_stream()
    calls = []

    def alloc(nbytes):
        calls.append(nbytes)
        return drv_mem_alloc(nbytes)

    assert gpuarray.sum(x).dtype == np.int64  # NumPy's promotion
    assert gpuarray.sum(x, np.float64).dtype == np.float64  # sum(a, dtype)
    fake.clear_launches()
    r = gpuarray.sum(x, np.float32, s, alloc)  # sum(a, dtype, stream, allocator)
    assert r.dtype == np.float32 and calls and fake.last_launch().stream == s.handle
    fake.clear_launches()
    gpuarray.sum(x, None, s)
    assert fake.last_launch().stream == s.handle
    for f in (gpuarray.any, gpuarray.all, gpuarray.min, gpuarray.max):
        fake.clear_launches()
        calls.clear()
        r = f(x, s, alloc) if f in (gpuarray.any, gpuarray.all) else f(x, s)
        assert r.shape == () and fake.last_launch().stream == s.handle
        if f in (gpuarray.any, gpuarray.all):
            assert calls and r.dtype == np.bool_
    fake.clear_launches()
    assert x.any(s).dtype == np.bool_ and fake.last_launch().stream == s.handle


def drv_stream():
    import cuplug.driver as drv

    return drv.Stream()


def drv_mem_alloc(nbytes):
    import cuplug.driver as drv

    return drv.mem_alloc(nbytes)


@pytest.mark.gpu
def test_numpy_forms_give_numpys_shapes_and_dtypes(env):
    gpuarray, _ = env
    h = np.zeros((4, 5, 6), np.int16)
    x = gpuarray.to_gpu(h)
    cases = [
        ("sum", {"axis": 0}),
        ("sum", {"axis": (0, 2), "keepdims": True}),
        ("prod", {"axis": -1, "dtype": np.int8}),
        ("mean", {"axis": 1}),
        ("var", {"axis": (1, 2), "ddof": 1}),
        ("std", {}),
        ("argmax", {"axis": 1, "keepdims": True}),
        ("argmin", {}),
        ("min", {"axis": 2}),
        ("any", {"axis": (0, 1)}),
        ("nanmean", {"axis": 0}),
        ("nanstd", {"axis": 1}),
    ]
    for kind, kwargs in cases:
        want = numpy_result(kind, h, **kwargs)
        got = getattr(gpuarray, kind)(x, **kwargs)
        assert (got.shape, got.dtype) == (want.shape, want.dtype), (kind, kwargs)
        if hasattr(x, kind):
            got = getattr(x, kind)(**kwargs)
            assert (got.shape, got.dtype) == (want.shape, want.dtype), (kind, kwargs)


@pytest.mark.gpu
def test_results_keep_the_inputs_memory_order(env):
    gpuarray, _ = env
    x = gpuarray.to_gpu(np.asfortranarray(np.zeros((3, 4, 5), np.float32)))
    r = x.sum(axis=0)
    assert r.shape == (4, 5) and r.flags.f_contiguous  # NumPy's "K" order, as numpy.sum
    assert gpuarray.to_gpu(np.zeros((3, 4, 5), np.float32)).sum(axis=0).flags.c_contiguous


@pytest.mark.gpu
def test_out_is_written_through_its_strides(env):
    gpuarray, fake = env
    x = gpuarray.zeros((10, 20), np.float32)
    big = gpuarray.zeros((20, 3), np.float64)
    out = big[::-1, 1]
    fake.clear_launches()
    assert gpuarray.sum(x, axis=0, out=out) is out
    f = fields(fake.last_launch())
    assert f["final"] == 1 and f["out"] == out.ptr and f["in"] == x.ptr
    fake.clear_launches()
    gpuarray.sum(x[:, ::-1], axis=0, out=out)  # a reversed input column: both walked forwards
    f = fields(fake.last_launch())
    assert f["out"] == out.ptr + 19 * out.strides[0] and f["in"] == x.ptr
    with pytest.raises(ValueError, match=r"out= has shape \(20,\), the result has shape \(10,\)"):
        gpuarray.sum(x, axis=1, out=out)
    with pytest.raises(TypeError, match="out= must be a GPUArray"):
        gpuarray.sum(x, axis=1, out=np.zeros(10))
    with pytest.raises(TypeError, match="cannot store its int64 result in out= of dtype float64"):
        gpuarray.argmax(x, axis=0, out=out)


@pytest.mark.gpu
def test_bad_reductions_name_the_problem(env):
    gpuarray, _ = env
    x = gpuarray.zeros((3, 0), np.float32)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        gpuarray.max(x, axis=1)
    with pytest.raises(ValueError, match="zero-size array to reduction operation fmin"):
        gpuarray.nanmin(x)
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        x.argmax()
    assert x.max(axis=0).shape == (0,)  # nothing reduced: nothing to raise
    assert gpuarray.sum(x, axis=1).shape == (3,)  # zeros
    y = gpuarray.zeros((2, 3), np.complex64)
    with pytest.raises(TypeError, match="not defined for complex dtype complex64"):
        y.max()
    with pytest.raises(axp.AxisError):
        y.sum(axis=2)
    with pytest.raises(TypeError, match="expected a GPUArray, got ndarray"):
        gpuarray.sum(np.zeros(3))
    with pytest.raises(TypeError, match="got float"):
        y.sum(axis=0.5)


@pytest.mark.gpu
def test_layouts_a_launch_cannot_take_are_copied_first(env):
    gpuarray, fake = env
    shape = (2,) * 20  # 10 kept axes that cannot merge: more than one launch takes
    x = gpuarray.zeros(shape, np.float32)
    fake.clear_launches()
    r = x.sum(axis=tuple(range(0, 20, 2)))
    assert r.shape == (2,) * 10
    names = [fake.launch(k).function for k in range(fake.launch_count())]
    assert any("copy" in n for n in names) and any("cuplug_axis_sum" in n for n in names)
    f = gpuarray.to_gpu(np.asfortranarray(np.zeros((3, 4), np.float32)))
    fake.clear_launches()
    assert f.argmax().shape == ()  # the flat index is C order's: a C-order copy first
    names = [fake.launch(k).function for k in range(fake.launch_count())]
    assert any("copy" in n for n in names)


@pytest.mark.gpu
def test_clear_context_caches_drops_the_reductions_kernels(env):
    from cuplug import tools

    gpuarray, _ = env
    import cuplug.driver as drv
    from cuplug._driver import context_cache

    def cached():
        found = context_cache.entries(drv.Context.get_current())
        fns = [k for k in found if isinstance(k, tuple) and k[0] == "axis fn"]
        return found.get(axr._PLANS), fns

    x = gpuarray.zeros((10,), np.float32)
    x.sum()
    plans, functions = cached()
    assert plans and functions
    tools.clear_context_caches()
    assert cached() == (None, [])
    x.sum()
