"""Sources written for nvcc compile under the default NVRTC backend: the C and C++ standard
headers device code includes (cuplug's in-memory stand-ins over libcu++), and a fall-back to nvcc,
with one warning, for host headers NVRTC cannot have. Compiles only: no GPU needed (a PyCUDA
header kernel that runs is test_compile_compat_gpu.py's)."""

import shutil
import uuid
import warnings

import pytest

from cuplug import compiler
from cuplug._compile import compiling

ARCH = "sm_90"

C_HEADERS = [
    "stdio.h",
    "stdint.h",
    "inttypes.h",
    "stddef.h",
    "stdbool.h",
    "stdlib.h",
    "string.h",
    "assert.h",
    "limits.h",
    "float.h",
    "math.h",
]
CXX_HEADERS = [
    "cstdio",
    "cstdint",
    "cinttypes",
    "cstddef",
    "cstdlib",
    "cstring",
    "cassert",
    "climits",
    "cfloat",
    "cmath",
    "algorithm",
    "array",
    "complex",
    "functional",
    "limits",
    "numeric",
    "tuple",
    "type_traits",
    "utility",
]

# What PyCUDA programs do with those headers, in one kernel.
EVERYDAY = r"""
#include <stdio.h>
#include <stdint.h>
#include <math.h>
#include <float.h>
#include <limits.h>
#include <assert.h>
#include <cmath>
#include <cstdint>
#include <limits>
#include <algorithm>
#include <complex>
__global__ void everyday(float *x, int n) {
  uint32_t a = 3;
  std::int64_t b = INT_MAX;
  size_t c = 2;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(n > 0);
  if (i < n) {
    x[i] = sqrtf(x[i]) + std::sqrt(2.0f) + std::min(x[i], 1.0f) + FLT_EPSILON + M_PI
           + std::numeric_limits<float>::max() * 0 + a + b * 0 + c;
    std::complex<float> z(1, 2);
    x[i] += std::abs(z) + (isnan(x[i]) ? 1 : 0) + (x[i] < INFINITY);
    if (i == 0) printf("n=%d x0=%f\n", n, x[0]);
  }
}
"""


def unique(source):
    return f"// {uuid.uuid4()}\n{source}"


def nvrtc(source, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a shim that warns (macro redefinitions) fails here
        return compiler.compile(unique(source), arch=ARCH, backend="nvrtc", **kw)


@pytest.mark.parametrize("header", C_HEADERS + CXX_HEADERS)
def test_each_standard_header_compiles_alone_under_nvrtc(header):
    assert nvrtc(f"#include <{header}>\n__global__ void k(float *x) {{ x[0] = 1; }}")


def test_everyday_pycuda_kernel_with_standard_headers_compiles_under_nvrtc():
    assert nvrtc(EVERYDAY).startswith(b"\x7fELF")


def test_cstring_gives_memcpy_and_memset_in_std_under_nvrtc():
    # CCCL 12.9 (the cu12 wheels) has no <cuda/std/cstring>: the builtins serve std:: there.
    src = r"""
#include <cstring>
__global__ void k(char *a, const char *b, int n) {
  std::memcpy(a, b, n);
  std::memset(a, 0, 1);
  memcpy(a + 1, b, 1);
}
"""
    assert nvrtc(src).startswith(b"\x7fELF")


@pytest.mark.parametrize("order", [("math.h", "cmath"), ("cmath", "math.h")])
def test_math_h_and_cmath_together_in_either_order_without_warnings(order):
    src = "".join(f"#include <{h}>\n" for h in order)
    nvrtc(src + "__global__ void k(float *x) { x[0] = INFINITY + NAN + std::sqrt(x[1]); }")


def test_float_limits_have_the_ieee_values():
    # Wrong values would make one of these static_asserts fail to compile.
    nvrtc(
        "#include <cfloat>\n#include <limits>\n"
        'static_assert(FLT_MAX == std::numeric_limits<float>::max(), "");\n'
        'static_assert(DBL_EPSILON == std::numeric_limits<double>::epsilon(), "");\n'
        'static_assert(FLT_MIN == std::numeric_limits<float>::min(), "");\n'
        'static_assert(FLT_MANT_DIG == 24 && DBL_MANT_DIG == 53, "");\n'
        "__global__ void k(float *x) { x[0] = FLT_TRUE_MIN; }",
        no_extern_c=True,
    )


def test_a_users_own_header_of_the_same_name_wins(tmp_path):
    (tmp_path / "stdio.h").write_text("#define CUPLUG_USER_STDIO 1\n")
    nvrtc(
        "#include <stdio.h>\n#ifndef CUPLUG_USER_STDIO\n#error the shim was used\n#endif\n"
        "__global__ void k(float *x) { x[0] = 1; }",
        include_dirs=[str(tmp_path)],
    )


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc on PATH for the fall-back")
def test_host_header_falls_back_to_nvcc_once_with_a_warning():
    src = "#include <iostream>\n__global__ void k(float *x) { x[0] = 1; }"
    compiling._fallback_warned.discard("iostream")
    with pytest.warns(compiler.CompilerWarning, match=r"<iostream>.*nvcc.*compiler='nvcc'"):
        cubin = compiler.compile(unique(src), arch=ARCH, no_extern_c=True)
    assert cubin.startswith(b"\x7fELF")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second time: no warning
        compiler.compile(unique(src), arch=ARCH, no_extern_c=True)


def test_no_fallback_when_the_backend_was_chosen():
    src = "#include <iostream>\n__global__ void k(float *x) { x[0] = 1; }"
    with pytest.raises(compiler.CompileError, match="iostream"):
        compiler.compile(unique(src), arch=ARCH, backend="nvrtc", no_extern_c=True)


def test_a_missing_user_header_reports_nvrtcs_error_not_nvccs():
    src = '#include "no_such_header_anywhere.h"\n__global__ void k(float *x) { x[0] = 1; }'
    with pytest.raises(compiler.CompileError) as info:
        compiler.compile(unique(src), arch=ARCH)
    assert "no_such_header_anywhere.h" in str(info.value)
    assert "nvrtc" in (info.value.command_line or "")


# {{{ nvcc-spelled options under NVRTC

HOST_SIDE = ["-O3", "-g", "-m64", "-c", "-Xcompiler", "-fPIC", "-Xcompiler=-Wall", "-ccbin", "gcc"]
LINK_SIDE = ["-lcudadevrt", "-L/usr/lib", "-Xlinker", "-rpath=/x", "--threads", "2"]


def test_host_and_link_options_written_for_nvcc_are_accepted_under_nvrtc():
    src = "__global__ void k(float *x) { x[0] = 1; }"
    assert nvrtc(src, options=HOST_SIDE + LINK_SIDE + ["-Wno-deprecated-gpu-targets", "-keep"])


@pytest.mark.parametrize(
    "options",
    [["--use-fast-math"], ["-line-info"], ["-lineinfo"], ["-res-usage"], ["-std=c++17", "-w"]],
    ids=" ".join,
)
def test_nvcc_spellings_nvrtc_lacks_are_translated(options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # -res-usage makes ptxas talk (a CompilerWarning)
        compiler.compile(
            unique("__global__ void k(float *x) { x[0] = 1; }"),
            arch=ARCH,
            backend="nvrtc",
            options=options,
        )


def test_fast_math_spelled_the_nvcc_way_changes_the_code():
    src = "__global__ void k(float *x) { x[0] = sinf(x[1]) / x[2]; }"
    plain = compiler.compile(unique(src), target="ptx", arch="compute_90", backend="nvrtc")
    fast = compiler.compile(
        unique(src), target="ptx", arch="compute_90", backend="nvrtc", options=["--use-fast-math"]
    )
    assert b"sin.approx" in fast and b"sin.approx" not in plain


def test_relaxed_constexpr_lets_kernels_call_unannotated_constexpr_functions():
    src = "constexpr int twice(int a) { return 2 * a; }\n"
    src += "__global__ void k(int *x) { x[0] = twice(x[1]); }"
    with pytest.raises(compiler.CompileError):
        compiler.compile(unique(src), arch=ARCH, backend="nvrtc", no_extern_c=True)
    nvrtc(src, options=["--expt-relaxed-constexpr"], no_extern_c=True)


def test_isystem_is_an_include_directory(tmp_path):
    (tmp_path / "mine.cuh").write_text("#define MINE 3\n")
    nvrtc(
        "#include <mine.cuh>\n__global__ void k(int *x) { x[0] = MINE; }",
        options=["-isystem", str(tmp_path)],
    )


@pytest.mark.parametrize(
    "options",
    [
        ["-gencode", "arch=compute_90,code=sm_90"],
        ["-gencode=arch=compute_90,code=sm_90"],
        ["--generate-code=arch=compute_90,code=[compute_90,sm_90]"],
    ],
    ids=" ".join,
)
def test_gencode_names_the_cubins_architecture(options):
    cubin = compiler.compile(
        unique("__global__ void k(float *x) { x[0] = 1; }"), backend="nvrtc", options=options
    )
    assert cubin.startswith(b"\x7fELF")
    assert b"sm_90" in cubin


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
def test_pycudas_dynamic_parallelism_recipe_compiles_and_links(backend, ctx):
    if backend == "nvcc" and shutil.which("nvcc") is None:
        pytest.skip("needs nvcc on PATH")
    from cuplug.compiler import DynamicModule

    src = unique(
        "__global__ void child(float *x) { x[threadIdx.x] = 1; }\n"
        "__global__ void parent(float *x) { child<<<1, 32>>>(x); }"
    )
    mod = DynamicModule(backend=backend)
    mod.add_source(src, nvcc_options=["-rdc=true", "-lcudadevrt", "-O3"])
    mod.add_stdlib("cudadevrt")
    mod.link()
    assert mod.get_function("parent") is not None


def test_a_missing_cudadevrt_says_where_it_comes_from(ctx, monkeypatch, tmp_path):
    # NVIDIA's CUDA 12 runtime wheels before 12.9 carry no libcudadevrt.a (GPU run with the 12.0
    # wheels, 2026-11-28): the message names the folders searched and how to get one.
    import cuplug.driver as drv
    from cuplug._compile import linking
    from cuplug.compiler import DynamicModule

    monkeypatch.setattr(linking, "_loaded_library_dirs", lambda: [])
    monkeypatch.setattr(linking._toolkit, "library_dirs", lambda: [str(tmp_path)])
    mod = DynamicModule()
    with pytest.raises(drv.RuntimeError, match=r"libcudadevrt\.a not found in: .*") as e:
        mod.add_stdlib("cudadevrt")
    assert str(tmp_path) in str(e.value)
    assert "nvidia-cuda-runtime-cu12>=12.9" in str(e.value)
    with pytest.raises(drv.RuntimeError, match=r"libcuplug_none\.a not found in: .*CUDA_PATH$"):
        mod.add_stdlib("cuplug_none")


# }}}


def test_gencode_translation_survives_pytorch_in_the_same_process():
    # PyTorch's libraries carry their own std::regex instantiations; a plugin that used
    # std::regex bound to them and crashed (seen on the GPU machine).
    pytest.importorskip("torch")
    code = (
        "import torch, uuid\nfrom cuplug import compiler\n"
        "src = '// ' + str(uuid.uuid4()) + '\\n__global__ void k(float *x) { x[0] = 1; }'\n"
        "opts = ['-gencode', 'arch=compute_90,code=sm_90']\n"
        "compiler.compile(src, backend='nvrtc', options=opts)\n"
        "print('ok')\n"
    )
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_the_names_nvccs_host_headers_give_every_source_exist_under_nvrtc():
    # PyCUDA's matrixmul_tiled example declares `const uint wA = 4;` with no include.
    nvrtc(
        "__global__ void k(float *x) { uint a = 1; ushort b = 2; ulong c = 3; x[0] = a + b + c; }"
    )
    nvrtc("typedef unsigned int uint;\n__global__ void k(float *x) { uint a = 1; x[0] = a; }")


# {{{ PyCUDA's device headers

PYCUDA_COMPLEX_KERNEL = r"""
#include <stdio.h>
#include <pycuda-complex.hpp>
#include <pycuda-helpers.hpp>
#include <math.h>
typedef pycuda::complex<float> cfloat;
__device__ float norma(cfloat z) { return norm(z); }
__global__ void step(cfloat *z, const cfloat *c, float *n, int power, int count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    cfloat v = pow(z[i], power) + c[i];
    z[i] = v + conj(v) * cfloat(0, 1) + pycuda::exp(cfloat(0, 0));
    n[i] = norma(v) + abs(v) + arg(v) + real(v) + imag(v);
  }
}
"""


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
def test_pycuda_complex_and_helpers_headers_compile_in_pycudas_extern_c_wrapper(backend):
    if backend == "nvcc" and shutil.which("nvcc") is None:
        pytest.skip("needs nvcc on PATH")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiler.compile(unique(PYCUDA_COMPLEX_KERNEL), arch=ARCH, backend=backend)


# }}}


_CURAND_KERNEL_PROBE = """
import warnings
import torch  # loads its own libnvrtc (a pip wheel's, with no CCCL next to it) before cuplug does
from cuplug import compiler
warnings.simplefilter("error")  # a fall-back to nvcc is a CompilerWarning: fail on it
src = '''#include <curand_kernel.h>
extern "C" __global__ void k(curandStatePhilox4_32_10_t *s, float *out) {
  curand_init(1234, threadIdx.x, 0, &s[threadIdx.x]);
  out[threadIdx.x] = curand_uniform(&s[threadIdx.x]);
}'''
compiler.compile(
    src, arch="sm_90", target="ptx", cache_dir=False, backend="nvrtc", no_extern_c=True
)
print("nvrtc ok")
"""


def test_curand_kernel_header_compiles_under_nvrtc_after_pytorch_loaded_its_nvrtc():
    # On the GPU machine PyTorch's pip-wheel libnvrtc was the one in use once torch was imported,
    # and its include dir lacks CCCL: <curand_kernel.h> -> <nv/target> failed under NVRTC and
    # every curandom kernel fell back to nvcc. The plugin now takes CCCL from the toolkit.
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed here (the GPU machine has it)")
    run = subprocess.run(
        [sys.executable, "-c", _CURAND_KERNEL_PROBE], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0 and "nvrtc ok" in run.stdout, run.stderr[-3000:]
