"""cuplug.elementwise without a GPU: argument parsing, constructor and call errors, PyCUDA's
module generators (their source compiles to PTX with NVRTC; under the fake driver they load and
prepare), and compile errors that show the generated source line."""

import re

import numpy as np
import pytest

from cuplug import elementwise
from cuplug._kernels.elementwise import _launch_arguments, _module_source
from cuplug.elementwise import ElementwiseKernel, ScalarArg, VectorArg, parse_arguments


def test_arguments_from_a_c_declaration():
    args = parse_arguments(
        "float *z, const double *__restrict__ x, int n2, unsigned char flag, "
        "pycuda::complex<float> *c, __half *h"
    )
    assert [type(a) for a in args] == [
        VectorArg,
        VectorArg,
        ScalarArg,
        ScalarArg,
        VectorArg,
        VectorArg,
    ]
    assert [a.name for a in args] == ["z", "x", "n2", "flag", "c", "h"]
    assert [a.dtype for a in args] == [
        np.dtype(t) for t in (np.float32, np.float64, np.int32, np.uint8, np.complex64, np.float16)
    ]


def test_arguments_as_objects_pass_through():
    given = [VectorArg(np.float32, "y"), ScalarArg(np.float64, "a")]
    assert parse_arguments(given) == given
    with pytest.raises(TypeError, match="VectorArg/ScalarArg objects, got str"):
        parse_arguments([VectorArg(np.float32, "y"), "float a"])


@pytest.mark.parametrize(
    "arguments, message",
    [
        ("float *x, quaternion q", r"cannot read argument 'quaternion q'.*unknown type"),
        ("float *x,, float y", "empty declaration"),
        ("", "empty declaration"),
        ("float *x, int x", "x declared more than once"),
        ("float *x, int n", "taken by the generated kernel"),
        ("float *i", "taken by the generated kernel"),
        ("float *cuplug_nd", "taken by the generated kernel"),
    ],
)
def test_bad_argument_lists_name_the_problem(arguments, message):
    with pytest.raises(ValueError, match=message):
        parse_arguments(arguments)


def test_constructor_errors():
    with pytest.raises(TypeError, match="unexpected keyword argument.*bogus"):
        ElementwiseKernel("float *x", "x[i] = 0", bogus=1)
    with pytest.raises(ValueError, match="not a C identifier"):
        ElementwiseKernel("float *x", "x[i] = 0", name="my kernel")
    with pytest.raises(ValueError, match="at least one vector argument"):
        ElementwiseKernel("float a, int b", "a = b")
    with pytest.raises(ValueError, match="operation must be C code"):
        ElementwiseKernel("float *x", "   ")


def test_constructor_keeps_pycuda_generator_arguments():
    k = ElementwiseKernel(
        "float *x",
        "x[i] = c",
        "fill_c",
        preamble="#define c 3",
        loop_prep="float unused = 0",
        after_loop="",
    )
    assert (k.name, k.preamble, k.loop_prep) == ("fill_c", "#define c 3", "float unused = 0")


def test_call_errors_before_any_device_work():
    k = ElementwiseKernel("float *z, float a, float *x", "z[i] = a * x[i]", "scale")
    with pytest.raises(TypeError, match=r"scale\(\) takes 3 arguments \(z, a, x\), got 2"):
        k(1, 2)
    with pytest.raises(TypeError, match="may not specify both range and slice"):
        k(1, 2, 3, range=slice(0, 1), slice=slice(0, 1))
    with pytest.raises(TypeError, match="unexpected keyword argument.*strem"):
        k(1, 2, 3, strem=None)
    with pytest.raises(TypeError, match=r"argument 'z' is declared as a vector.*got ndarray"):
        k(np.zeros(3, np.float32), 2.0, np.zeros(3, np.float32))


def test_pycuda_module_source_has_64_bit_n_and_range_parameters():
    args = parse_arguments("float *z, float a, const float *x")
    source, entry = _module_source(args, "z[i] = a * x[i]", "axpb", "", "", "", False)
    assert entry == "axpb"
    assert 'extern "C" __global__' in source
    assert "const unsigned long long n" in source and "long long start" not in source
    ranged, _ = _module_source(args, "z[i] = a * x[i]", "axpb", "", "", "", True)
    for p in ("const long long start", "const long long stop", "const long long step"):
        assert p in ranged
    full = _launch_arguments(args, True)
    assert "".join(a.struct_char for a in full) == "PfPLlll"


def test_pycuda_module_sources_compile_with_nvrtc():
    from cuplug.compiler import compile

    args = parse_arguments("double *z, const int *x, pycuda::complex<double> *c")
    parts = [
        _module_source(args, "z[i] = x[i] + c[i].real()", f"k{int(r)}", "", "", "", r)[0]
        for r in (False, True)
    ]
    ptx = compile(
        "\n".join(parts),
        arch="compute_90",
        target="ptx",
        backend="nvrtc",
        no_extern_c=True,
        cache_dir=False,
    ).decode()
    assert re.search(r"\.entry k0\b", ptx) and re.search(r"\.entry k1\b", ptx)


@pytest.mark.gpu
def test_get_elwise_kernel_and_types_prepares_pycudas_argument_list(ctx):
    mod, func, args = elementwise.get_elwise_kernel_and_types(
        "float *z, float a", "z[i] = a", "fill_a", use_range=True
    )
    assert [a.name for a in args] == ["z", "a", "n", "start", "stop", "step"]
    assert func.arg_format == "PfLlll"
    assert mod.get_function("fill_a") is not None
    plain = elementwise.get_elwise_kernel("float *z, float a", "z[i] = a", "fill_b")
    assert plain.arg_format == "PfL"


@pytest.mark.gpu
def test_compile_error_shows_the_generated_source_line(ctx):
    from cuplug.compiler import CompileError

    with pytest.raises(CompileError) as info:
        elementwise.get_elwise_module("float *z", "z[i] = no_such_function(z[i])", "broken")
    message = str(info.value)
    assert "no_such_function" in message
    # The excerpt marks the generated line the error is at.
    assert any(
        line.startswith(">") and "no_such_function" in line for line in message.splitlines()
    ), message
    assert "no_such_function" in info.value.source


def test_unknown_generator_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument.*prelude"):
        elementwise.get_elwise_kernel_and_types("float *z", "z[i] = 0", prelude="")


def test_pycuda_array_modules_are_cuplugs(tmp_path):
    from support.subprocesses import run_python

    out = run_python(
        """
        import cuplug.compat.pycuda
        import pycuda.gpuarray as gpuarray, pycuda.elementwise, pycuda.cumath as cumath
        from pycuda.elementwise import ElementwiseKernel, get_elwise_module
        import cuplug.gpuarray, cuplug.elementwise, cuplug.cumath
        assert gpuarray is cuplug.gpuarray and cumath is cuplug.cumath
        assert pycuda.elementwise is cuplug.elementwise
        assert ElementwiseKernel is cuplug.elementwise.ElementwiseKernel
        assert hasattr(gpuarray.GPUArray, "__dlpack__") and gpuarray.from_dlpack
        print("ok")
        """,
        tmp_path,
    )
    assert out.strip() == "ok"


@pytest.mark.gpu
def test_range_kernel_is_loaded_again_in_a_new_context_with_a_destroyed_ones_handle(ctx, fake):
    import cuplug.driver as drv
    import cuplug.gpuarray as gpuarray

    fill = ElementwiseKernel("float *z, float v", "z[i] = v", "fill_range")
    fake.reuse_context_handles()
    try:
        for _ in range(2):  # the second context gets the first one's handle
            c = drv.Device(0).make_context()
            try:
                z = gpuarray.zeros((16,), np.float32)
                fake.clear_launches()
                fill(z, 1.0, range=slice(2, 10, 3))
                assert fake.launch_count() == 1
                del z
            finally:
                drv.Context.pop()
                c.detach()
    finally:
        fake.reuse_context_handles(False)
    assert fake.take_undefined_behaviour() == []
