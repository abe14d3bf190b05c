"""Whole-array reductions (cuplug.reduction, gpuarray.sum/dot/min/max/...): the generated kernels
compile and launch for every dtype (fake driver in CI, the GPU there), the split of the work is a
function of the size alone, and errors name the problem. Results against NumPy:
test_reductions_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest
from support.dtype_matrix import ARRAY_DTYPES

import cuplug.gpuarray as gpuarray
from cuplug import reduction
from cuplug._codegen import reduction as rg

NUMERIC = [np.dtype(d) for d in ARRAY_DTYPES]
REAL = [d for d in NUMERIC if d.kind in "biuf"]


@pytest.mark.parametrize("n", [0, 1, 255, 1024, 1025, 10**6 + 3, 2**32 + 5])
@pytest.mark.parametrize("max_blocks", [1, 132 * 8])
def test_split_covers_every_element_once(n, max_blocks):
    blocks, chunk = rg.split(n, max_blocks)
    assert 1 <= blocks <= max_blocks
    assert chunk % rg.BLOCK == 0
    assert blocks * chunk >= n
    assert (blocks - 1) * chunk < max(n, 1)  # no block without elements (but for n == 0)
    assert rg.split(n, max_blocks) == (blocks, chunk)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_every_builtin_reduction_compiles_and_launches(ctx, dtype):
    x = gpuarray.zeros((5000,), dtype)
    idx = gpuarray.zeros((7,), np.int32)
    results = [
        gpuarray.sum(x),
        gpuarray.sum(x[:10]),  # one block
        gpuarray.dot(x, x),
        gpuarray.vdot(x, x),
        gpuarray.subset_sum(idx, x),
        gpuarray.subset_dot(idx, x, x),
        gpuarray.any(x),
        gpuarray.all(x),
        gpuarray.sum(x[::3]),  # strided: copied first
    ]
    if dtype.kind != "c":
        results += [gpuarray.min(x), gpuarray.max(x), gpuarray.subset_max(idx, x)]
    for r in results:
        assert r.shape == ()
    assert results[0].dtype == np.sum(np.zeros(1, dtype)).dtype
    assert results[2].dtype == np.result_type(dtype, dtype)
    assert results[6].dtype == np.bool_


@pytest.mark.gpu
def test_reduction_kernel_of_pycuda_docs(ctx):
    krnl = reduction.ReductionKernel(
        np.float32,
        neutral="0",
        reduce_expr="a+b",
        map_expr="x[i]*y[i]",
        arguments="float *x, float *y",
    )
    x = gpuarray.zeros((10000,), np.float32)
    out = gpuarray.empty((3,), np.float32)
    r = krnl(x, x, out=out[1])
    # The result is written into out= (a 0-d view of out's second element), not a new array.
    assert r.shape == () and r.dtype == np.float32 and r.ptr == out[1].ptr
    with pytest.raises(TypeError, match="takes 2 arguments"):
        krnl(x)
    with pytest.raises(TypeError, match="'y' must be a GPUArray"):
        krnl(x, 3)
    with pytest.raises(ValueError, match="out= must be a GPUArray of one float32"):
        krnl(x, x, out=gpuarray.empty((2,), np.float32))
    with pytest.raises(ValueError, match="contiguous"):
        krnl(x[::2], x[::2])


@pytest.mark.gpu
def test_bad_reductions_name_the_problem(ctx):
    with pytest.raises(ValueError, match="at least one vector"):
        reduction.ReductionKernel(np.float32, "0", "a+b", "a", arguments="float a")
    with pytest.raises(ValueError, match="zero-size array to reduction operation minimum"):
        gpuarray.min(gpuarray.empty((0,), np.float32))
    with pytest.raises(ValueError, match="sizes differ"):
        gpuarray.dot(gpuarray.zeros((3,), np.float32), gpuarray.zeros((4,), np.float32))
    with pytest.raises(TypeError, match="integer indices"):
        gpuarray.subset_sum(gpuarray.zeros((3,), np.float32), gpuarray.zeros((4,), np.float32))
    with pytest.raises(TypeError, match="complex"):
        gpuarray.max(gpuarray.zeros((3,), np.complex64))
    from cuplug.driver import CompileError

    with pytest.raises(CompileError):
        reduction.ReductionKernel(np.float32, "0", "a+", "x[i]", arguments="float *x")


# ---- docstrings: NumPy's sections, generated from one table (cuplug._array.reductions) ---------

REDUCTION_FUNCTIONS = """sum prod nansum nanprod min max nanmin nanmax argmin argmax any all mean
nanmean var std nanvar nanstd subset_sum dot vdot subset_min subset_max subset_dot""".split()


@pytest.mark.parametrize("name", REDUCTION_FUNCTIONS)
def test_reduction_docstrings_keep_their_numpy_sections(name):
    """help(gpuarray.sum) shows the summary, then one Parameters entry per parameter of the
    signature, in order, with type and description, then Returns: what the repeated sections
    said before they were generated."""
    import inspect

    fn = getattr(gpuarray, name)
    doc = inspect.getdoc(fn)
    summary, rest = doc.split("\n\nParameters\n----------\n")
    assert summary.strip() and not summary.startswith(" ")
    params, returns = rest.split("\n\nReturns\n-------\n")
    assert returns.startswith("GPUArray\n    ") and returns.rstrip().endswith(".")
    names = list(inspect.signature(fn).parameters)
    if "b" in names:
        names[names.index("a")] = "a, b"
        names.remove("b")
    lines = params.split("\n")
    assert [line.split(" : ")[0] for line in lines[::2]] == names
    for entry, description in zip(lines[::2], lines[1::2]):
        assert " : " in entry and entry.split(" : ")[1].strip(), entry
        assert description.startswith("    ") and description.strip().endswith("."), entry
    if "allocator" in names:
        assert "allocator : collections.abc.Callable | None\n    Allocates" in params
    if "axis" in names:
        assert "axis : int | tuple[int, ...] | None\n    The axes to reduce" in params
