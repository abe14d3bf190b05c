"""PyCUDA's reduction names (issue 24, part B): get_reduction_module /
get_reduction_kernel_and_types (PyCUDA's one-stage template, for code that builds its own
two-stage reductions), and get_any_kernel / get_all_kernel called with PyCUDA's (dtype_out,
dtype_in). Fake driver: launches are recorded, not run (results: test_pycuda_names_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest

from cuplug import gpuarray, reduction

# ---- reduction -----------------------------------------------------------------------------------


@pytest.mark.gpu
def test_get_reduction_kernel_and_types_both_stages(ctx, fake):
    s1, types1 = reduction.get_reduction_kernel_and_types(
        1, "float", 512, "0", "a+b", "x[i]*y[i]", "const float *x, const float *y", name="dot1"
    )
    assert types1 == ["P", "P"]
    assert s1.arg_format == "PPPIN"
    s2, types2 = reduction.get_reduction_kernel_and_types(
        2, "float", 512, "0", "a+b", arguments="const float *x, const float *y", name="dot2"
    )
    assert types2 == ["P", "P", "P"]
    assert s2.arg_format == "PPPPIN"
    fake.clear_launches()
    s1.prepared_async_call((4, 1), (512, 1, 1), None, 0, 0, 0, 1, 2048, shared_size=2048)
    launch = fake.last_launch()
    assert launch.function == "dot1" and launch.shared_bytes == 2048


@pytest.mark.gpu
def test_get_reduction_module_is_pycudas_template(ctx):
    mod = reduction.get_reduction_module(
        "double", 128, "0", "a+b", "in[i]", "const double *in", name="sum_d"
    )
    assert mod.get_function("sum_d") is not None


def test_reduction_factories_refuse_what_pycuda_would_miscompile():
    with pytest.raises(ValueError, match="power of two from 2 to 512, got 1024"):
        reduction.get_reduction_module("float", 1024, "0", "a+b", "in[i]", "const float *in")
    with pytest.raises(ValueError, match="stage must be 1 or 2, got 3"):
        reduction.get_reduction_kernel_and_types(3, "float", 512, "0", "a+b")


# ---- reduction.get_any_kernel / get_all_kernel --------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["any", "all"])
def test_any_all_kernels_take_pycudas_dtype_out_dtype_in(ctx, which):
    factory = getattr(reduction, f"get_{which}_kernel")
    knl = factory(np.float32, np.int32)  # PyCUDA's (dtype_out, dtype_in)
    assert knl.dtype_out == np.float32
    assert knl.arguments[0].dtype == np.int32
    assert factory(None, np.int16).dtype_out == np.int16  # None: dtype_in's
    one = factory(np.float64)  # cuplug's one-argument form: the elements', a bool result
    assert one.dtype_out == np.bool_ and one.arguments[0].dtype == np.float64
    assert factory(dtype=np.float64) is one
    x = gpuarray.to_gpu(np.arange(5, dtype=np.int32))
    assert knl(x).dtype == np.float32
    with pytest.raises(TypeError, match="dtype= is the one-argument form"):
        factory(np.float32, dtype=np.float64)
