"""PyCUDA's elementwise names cuplug lacked (issue 24, part B), called as PyCUDA code calls
them: the get_*_kernel factories (get_linear_combination_kernel's GPU scalars as
gpu_scalar_mult.py binds them), get_elwise_module with PyCUDA's own trailing ``n``, and
ElementwiseKernel.generate_stride_kernel_and_types. On the fake driver kernels compile and load
but do not run: these check names, argument formats and what a launch is given (results:
test_pycuda_names_gpu.py)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug import elementwise, gpuarray

F32, F64, C64, I32 = (np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.int32))

# (factory, PyCUDA's arguments, kernel name, the prepared argument format)
FACTORIES = [
    ("get_copy_kernel", (F32, F64), "copy", "PPL"),
    ("get_axpbyz_kernel", (F32, F32, F32), "axpbyz", "fPfPPL"),
    ("get_axpbyz_kernel", (F32, F32, C64, True, False), "axpbyz", "fPfPPL"),
    ("get_axpbz_kernel", (F32, F32), "axpb", "fPfPL"),
    ("get_binary_op_kernel", (F32, F32, F32, "+"), "multiply", "PPPL"),
    ("get_binary_op_kernel", (I32, F32, F32, "*", False, True), "multiply", "PPPL"),
    ("get_rdivide_elwise_kernel", (F32, F32), "divide_r", "PfPL"),
    ("get_binary_func_kernel", ("fmaxf", F32, F32, F32), "fmaxf_kernel", "PPPL"),
    ("get_binary_func_scalar_kernel", ("fminf", F32, F32, F32), "fminf_kernel", "PfPL"),
    ("get_binary_minmax_kernel", ("max", F32, F32, F32, False), "fmaxf_kernel", "PPPL"),
    ("get_binary_minmax_kernel", ("min", F64, F64, F64, True), "fmin_kernel", "PdPL"),
    ("get_fill_kernel", (F32,), "fill", "fPL"),
    ("get_reverse_kernel", (F64,), "reverse", "PPL"),
    ("get_real_kernel", (C64, F32), "real", "PPL"),
    ("get_imag_kernel", (C64, F32), "imag", "PPL"),
    ("get_conj_kernel", (C64, C64), "conj", "PPL"),
    ("get_arange_kernel", (F32,), "arange", "PffL"),
    ("get_pow_array_kernel", (F32, F32, F32, True, True), "pow_method", "PPPL"),
    ("get_pow_array_kernel", (F32, F32, F32, False, True), "pow_method", "fPPL"),
    ("get_pow_array_kernel", (F64, F64, F64, True, False), "pow_method", "PdPL"),
    ("get_fmod_kernel", (), "fmod_kernel", "PPPL"),
    ("get_modf_kernel", (), "modf_kernel", "PPPL"),
    ("get_frexp_kernel", (), "frexp_kernel", "PPPL"),
    ("get_ldexp_kernel", (), "ldexp_kernel", "PPPL"),
    ("get_unary_func_kernel", ("sinf", F32), "sinf_kernel", "PPL"),
    ("get_unary_func_kernel", ("abs", I32, F32), "abs_kernel", "PPL"),
    ("get_if_positive_kernel", (F32, F64), "if_positive", "PPPPL"),
    ("get_where_kernel", (I32, F32), "if_positive", "PPPPL"),
    ("get_scalar_op_kernel", (F32, F32, F32, "*"), "scalarop_kernel", "PfPL"),
    ("get_logical_not_kernel", (F32, np.dtype(np.bool_)), "logical_not", "PPL"),
    ("get_put_kernel", (F32, I32, 2), "put", "PPPPPL"),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("factory", "args", "name", "fmt"), FACTORIES)
def test_get_kernel_factories_compile_prepare_and_launch(ctx, fake, factory, args, name, fmt):
    func = getattr(elementwise, factory)(*args)
    assert func.arg_format == fmt
    assert getattr(elementwise, factory)(*args) is func, "memoized per context"
    fake.clear_launches()
    values = [0 if c == "P" else 1 for c in fmt]
    func.prepared_call((1, 1), (32, 1, 1), *values)
    launch = fake.last_launch()
    assert launch.function == name
    assert launch.grid == (1, 1, 1) and launch.block == (32, 1, 1)


def test_every_factory_pycuda_has_is_exported():
    pycuda_factories = {
        "get_copy_kernel", "get_linear_combination_kernel", "get_axpbyz_kernel",
        "get_axpbz_kernel", "get_binary_op_kernel", "get_rdivide_elwise_kernel",
        "get_binary_func_kernel", "get_binary_func_scalar_kernel", "get_binary_minmax_kernel",
        "get_fill_kernel", "get_reverse_kernel", "get_real_kernel", "get_imag_kernel",
        "get_conj_kernel", "get_arange_kernel", "get_pow_array_kernel", "get_fmod_kernel",
        "get_modf_kernel", "get_frexp_kernel", "get_ldexp_kernel", "get_unary_func_kernel",
        "get_if_positive_kernel", "get_where_kernel", "get_scalar_op_kernel",
        "get_logical_not_kernel", "get_put_kernel", "get_take_kernel", "get_take_put_kernel",
    }  # fmt: skip
    assert len(pycuda_factories) == 28
    assert pycuda_factories <= set(elementwise.__all__)
    assert all(callable(getattr(elementwise, n)) for n in pycuda_factories)


def test_texture_take_kernels_say_why_they_are_gone():
    with pytest.raises(drv.NotSupportedError, match="texture references were removed"):
        elementwise.get_take_kernel(F32, I32)
    with pytest.raises(drv.NotSupportedError, match="texture references were removed"):
        elementwise.get_take_put_kernel(F32, I32, False)


@pytest.mark.gpu
def test_linear_combination_with_host_scalars(ctx, fake):
    func, texrefs = elementwise.get_linear_combination_kernel(
        ((False, F32, F32), (False, F32, F32)), F32
    )
    assert texrefs == []
    assert func.arg_format == "fPfPPL"
    fake.clear_launches()
    func.prepared_call((1, 1), (32, 1, 1), 2.0, 0, 3.0, 0, 0, 10)
    assert fake.last_launch().function == "linear_combination"


@pytest.mark.gpu
def test_linear_combination_with_gpu_scalars_as_gpu_scalar_mult_does(ctx, fake):
    """PyCUDA's wiki example gpu_scalar_mult.py: the GPU scalars are bound to the returned
    texture references, and the kernel is called with the vectors only."""
    lc_kernel, lc_texrefs = elementwise.get_linear_combination_kernel(
        ((True, F32, F32), (True, F32, F32)), F32
    )
    assert len(lc_texrefs) == 2
    a = gpuarray.to_gpu(np.array(5, dtype=np.float32))
    b = gpuarray.to_gpu(np.array(7, dtype=np.float32))
    x = gpuarray.empty(64, np.float32)
    y = gpuarray.empty(64, np.float32)
    z = gpuarray.empty_like(x)
    with pytest.raises(ValueError, match="bind the GPU scalar to tex_a0 first"):
        lc_kernel.prepared_call(x._grid, x._block, x.gpudata, y.gpudata, z.gpudata, x.mem_size)
    assert a.bind_to_texref_ext(lc_texrefs[0], allow_double_hack=True) == 0
    b.bind_to_texref_ext(lc_texrefs[1], allow_double_hack=True)
    fake.clear_launches()
    lc_kernel.prepared_call(x._grid, x._block, x.gpudata, y.gpudata, z.gpudata, x.mem_size)
    launch = fake.last_launch()
    assert launch.function == "linear_combination"
    pointers = struct.unpack("6Q", launch.params[:48])
    assert pointers[:5] == (int(a.gpudata), int(x.gpudata), int(b.gpudata), int(y.gpudata),
                            int(z.gpudata))  # fmt: skip
    assert pointers[5] == 64


@pytest.mark.gpu
def test_gpuarray_has_pycudas_launch_geometry(ctx):
    """gpu_scalar_mult.py launches with x._grid, x._block: PyCUDA's splay(x.size)."""
    x = gpuarray.empty(1 << 20, np.float32)
    assert (x._grid, x._block) == gpuarray.splay(x.size)
    assert gpuarray.empty(10, np.float32)._block == (32, 1, 1)

    class Sub(gpuarray.GPUArray):  # PyCUDA's subclasses may set their own
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._grid = (7, 1)

    s = Sub((64,), np.float32)
    assert s._grid == (7, 1) and s._block == gpuarray.splay(64)[1]


@pytest.mark.gpu
def test_a_scalar_texref_refuses_memory_smaller_than_the_scalar(ctx):
    _, (texref,) = elementwise.get_linear_combination_kernel(((True, F64, F64),), F64)
    small = gpuarray.empty(1, np.float32)
    with pytest.raises(ValueError, match="needs 8 bytes, the bound memory has 4"):
        small.bind_to_texref(texref)


@pytest.mark.gpu
def test_get_elwise_module_takes_pycudas_own_n_argument(ctx):
    """gpu_scalar_mult.py's main_no_tex builds its module with ScalarArg(np.uintp, "n") last."""
    args = [
        elementwise.VectorArg(F32, "global_a0"),
        elementwise.VectorArg(F32, "x0"),
        elementwise.VectorArg(F32, "z"),
        elementwise.ScalarArg(np.uintp, "n"),
    ]
    mod = elementwise.get_elwise_module(
        args, "z[i] = a0*x0[i]", "linear_combination", loop_prep="float a0 = *global_a0"
    )
    func = mod.get_function("linear_combination")
    func.prepare("".join(a.struct_char for a in args))
    assert func.arg_format == "PPPL"
    mod = elementwise.get_elwise_module("float *z, unsigned long n", "z[i] = 1", "one")
    assert mod.get_function("one") is not None
    with pytest.raises(ValueError, match="declared as int32.*64-bit unsigned"):
        elementwise.get_elwise_module("float *z, int n", "z[i] = 1", "two")


@pytest.mark.gpu
def test_generate_stride_kernel_and_types(ctx, fake):
    knl = elementwise.ElementwiseKernel("float a, float *x, float *y", "y[i] = a*x[i]", "ax")
    mod, func, arguments = knl.generate_stride_kernel_and_types(False)
    assert [a.name for a in arguments] == ["a", "x", "y", "n"]
    assert func.arg_format == "fPPL"
    assert mod.get_function("ax") is not None
    assert knl.generate_stride_kernel_and_types(False)[1] is func
    _, rfunc, rargs = knl.generate_stride_kernel_and_types(use_range=True)
    assert [a.name for a in rargs][-3:] == ["start", "stop", "step"]
    assert rfunc is not func
    fake.clear_launches()
    func.prepared_call((1, 1), (32, 1, 1), 2.0, 0, 0, 5)
    assert fake.last_launch().function == "ax"
