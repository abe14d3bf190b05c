"""cuplug.compiler: both backends to PTX and cubin, errors with line numbers, warnings, arch
choice and clamping, backend selection (API, environment, config file), templates, globals,
dynamic parallelism. Tests without a marker need no GPU; the kernels that run are
test_compiler_gpu.py's, and an nvcc that never finishes is test_compiler_stuck_nvcc.py's."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from support.compile_sources import DOUBLE_ARRAY, unique

import cuplug
import cuplug.driver as drv
from cuplug import compiler
from cuplug._compile import compiling
from cuplug._core import _compiler as _cc

BACKENDS = ["nvrtc", "nvcc"]


def usable_or_skip(backend):
    """Skips when ``backend`` has no compiler here: nvcc where the toolkit search finds none (on
    a CUDA 12 driver with the cu12 wheels, CUDA 13's nvcc is left out and the wheels bring no
    nvcc: tools/gpu_check.sh cu12). Any other failure to create it fails the test."""
    try:
        _cc.compiler_info(backend, {})
    except drv.ConfigError as e:
        if backend == "nvcc" and "nvcc not found" in str(e):
            pytest.skip(f"no nvcc for this toolkit: {e}")
        raise


TEMPLATES = """
template <typename T> __global__ void scale(T *a, T s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= s;
}
"""


def stores_float(ptx, value):
    """PTX holds a float constant as a literal (0f...) or, optimised, as its bits in a move."""
    bits = int(np.array(value, np.float32).view(np.uint32))
    return f"0f{bits:08X}".encode() in ptx or str(bits).encode() in ptx


def run_python(code, **env):
    full = dict(os.environ)
    full.update(env)
    for k, v in env.items():
        if v is None:
            del full[k]
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=300
    )


# ---- compiling without a device --------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_both_backends_compile_to_ptx_and_cubin(backend):
    ptx = compiler.compile(DOUBLE_ARRAY, arch="sm_90", target="ptx", backend=backend)
    assert b".entry double_array" in ptx
    assert b".target sm_90" in ptx
    cubin = compiler.compile(DOUBLE_ARRAY, arch="sm_90", backend=backend)
    assert cubin[:4] == b"\x7fELF"
    assert b"double_array" in cubin


def test_nvcc_makes_fatbin_and_nvrtc_refuses_it():
    fatbin = compiler.compile(DOUBLE_ARRAY, arch="sm_90", target="fatbin", backend="nvcc")
    assert len(fatbin) > 100
    with pytest.raises(drv.NotSupportedError, match="fatbin"):
        compiler.compile(DOUBLE_ARRAY, arch="sm_90", target="fatbin", backend="nvrtc")
    with pytest.raises(ValueError, match="unknown compile target 'elf'"):
        compiler.compile(DOUBLE_ARRAY, arch="sm_90", target="elf")


def test_the_selected_backend_is_used_by_default():
    with cuplug.using(compiler="nvcc"):
        _, _, name = compiling.compile_source(DOUBLE_ARRAY, arch="sm_90")
    assert name == "nvcc"
    with cuplug.using(compiler="nvrtc"):
        _, _, name = compiling.compile_source(DOUBLE_ARRAY, arch="sm_90")
    assert name == "nvrtc"


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_error_carries_log_command_and_line_numbers(backend):
    source = "__global__ void k(float *a) {\n  a[0] = 1;\n  undefined_thing = 2;\n}\n"
    with pytest.raises(drv.CompileError) as info:
        compiler.compile(unique(source), arch="sm_90", backend=backend)
    e = info.value
    assert e.msg.startswith(f"{backend} compilation of kernel.cu failed")
    assert e.line_numbers == [4]  # the unique() comment is line 1
    assert "undefined_thing" in e.log and e.stderr == e.log
    assert "kernel.cu(4): error" in e.log
    assert backend in str(e.command_line)
    text = str(e)
    assert "[errors at line 4:" in text
    assert ">    4 |   undefined_thing = 2;" in text
    assert "[command: " in text and "[stderr:" in text
    assert isinstance(e, drv.Error)


def test_line_numbers_match_the_users_source_with_and_without_extern_c():
    source = "\n\n__global__ void k(float *a) { oops; }\n"
    for no_extern_c in (False, True):
        with pytest.raises(drv.CompileError) as info:
            compiler.compile(source, arch="sm_90", no_extern_c=no_extern_c, cache_dir=False)
        assert info.value.line_numbers == [3]


def test_dump_source_on_error(monkeypatch):
    monkeypatch.setenv("CUPLUG_DUMP_SOURCE_ON_ERROR", "1")
    source = unique("__global__ void k() { nope(); }\n")
    with pytest.raises(drv.CompileError) as info:
        compiler.compile(source, arch="sm_90")
    path = info.value.source_file
    try:
        assert f"[source written to {path}]" in str(info.value)
        assert source in open(path).read()
    finally:
        os.unlink(path)
    monkeypatch.delenv("CUPLUG_DUMP_SOURCE_ON_ERROR")
    with pytest.raises(drv.CompileError) as info:
        compiler.compile(source, arch="sm_90")
    assert info.value.source_file is None and "source written" not in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_diagnostics_of_a_good_compile_warn_once(backend):
    source = unique("#warning cuplug says hello\n__global__ void k(float *a) { a[0] = 1; }\n")
    with pytest.warns(compiler.CompilerWarning, match="cuplug says hello") as record:
        compiler.compile(source, arch="sm_90", backend=backend)
    assert len([w for w in record if issubclass(w.category, compiler.CompilerWarning)]) == 1
    assert issubclass(compiler.CompilerWarning, UserWarning)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiler.compile(source, arch="sm_90", backend=backend)  # cached: nothing to say


def test_nvrtc_names_the_option_it_rejects():
    with pytest.raises(drv.ConfigError, match="'--no-such-flag'"):
        compiler.compile(DOUBLE_ARRAY, arch="sm_90", options=["--no-such-flag"], backend="nvrtc")


def test_bad_arguments():
    with pytest.raises(TypeError, match="source must be a str"):
        compiler.compile(b"__global__ void k() {}", arch="sm_90")
    with pytest.raises(TypeError, match="options must be a list of strings, but it holds int 3"):
        compiler.compile(DOUBLE_ARRAY, arch="sm_90", options=[3])
    with pytest.raises(drv.ConfigError, match="arch: 'sm_nine' is not a GPU architecture"):
        compiler.compile(DOUBLE_ARRAY, arch="sm_nine")


def test_default_flags_come_from_the_environment():
    code = "from cuplug import compiler; print(compiler.DEFAULT_NVCC_FLAGS)"
    out = run_python(code, CUPLUG_DEFAULT_NVCC_FLAGS=" -DA=1  -DB ", PYCUDA_DEFAULT_NVCC_FLAGS="-x")
    assert out.stdout.strip() == "['-DA=1', '-DB']", out.stderr
    out = run_python(code, CUPLUG_DEFAULT_NVCC_FLAGS=None, PYCUDA_DEFAULT_NVCC_FLAGS="-DP=2")
    assert out.stdout.strip() == "['-DP=2']", out.stderr


def test_default_flags_apply_when_options_is_none(monkeypatch):
    source = unique("__global__ void k(float *a) { a[0] = VALUE; }\n")
    monkeypatch.setattr(compiler, "DEFAULT_NVCC_FLAGS", ["-DVALUE=2.5f"])
    ptx = compiler.compile(source, arch="sm_90", target="ptx")
    assert stores_float(ptx, 2.5)
    # Options given replace the defaults (PyCUDA): VALUE is then undefined.
    with pytest.raises(drv.CompileError):
        compiler.compile(source, arch="sm_90", options=["-DOTHER=1"])


def test_include_dirs_and_the_cuda_headers(tmp_path):
    (tmp_path / "scale.h").write_text("#define SCALE 6.0f\n")
    source = (
        '#include "scale.h"\n#include <cuda_fp16.h>\n'
        "__global__ void k(float *a) { a[0] = SCALE; }\n"
    )
    for backend in BACKENDS:
        ptx = compiler.compile(
            source,
            arch="sm_90",
            target="ptx",
            include_dirs=[tmp_path],
            backend=backend,
            no_extern_c=True,  # C++ headers cannot be included with C linkage
        )
        assert stores_float(ptx, 6.0)


def test_cub_compiles_with_nvrtc():
    source = """#include <cub/block/block_reduce.cuh>
extern "C" __global__ void block_sum(const float *in, float *out) {
  using reduce = cub::BlockReduce<float, 128>;
  __shared__ typename reduce::TempStorage tmp;
  float s = reduce(tmp).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) *out = s;
}
"""
    cubin = compiler.compile(source, arch="sm_90", no_extern_c=True, backend="nvrtc")
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("backend", BACKENDS)
def test_keep_leaves_the_compiler_output(backend, capsys):
    compiler.compile(unique(DOUBLE_ARRAY), arch="sm_90", keep=True, backend=backend)
    out = capsys.readouterr().out
    assert out.startswith("*** compiler output in ")
    kept = out.split("*** compiler output in ", 1)[1].strip()
    try:
        assert os.path.isfile(os.path.join(kept, "kernel.cu"))
        assert os.path.isfile(os.path.join(kept, "kernel.cubin"))
    finally:
        import shutil

        shutil.rmtree(kept)


def test_nvcc_path_argument_and_setting(monkeypatch):
    with pytest.raises(drv.ConfigError, match="/nonexistent/nvcc"):
        compiler.compile(DOUBLE_ARRAY, arch="sm_90", backend="nvcc", nvcc="/nonexistent/nvcc")
    import shutil

    real = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cubin = compiler.compile(unique(DOUBLE_ARRAY), arch="sm_90", backend="nvcc", nvcc=real)
    assert cubin[:4] == b"\x7fELF"
    # NVCC names the nvcc of a backend made from the environment.
    out = run_python(
        "from cuplug import compiler; compiler.compile('__global__ void k(){}', arch='sm_90', "
        "backend='nvcc')",
        NVCC="/nonexistent/nvcc-env",
    )
    assert out.returncode != 0 and "NVCC='/nonexistent/nvcc-env'" in out.stderr


def test_nvcc_helpers():
    assert "release" in compiler.get_nvcc_version("nvcc")
    pre = compiler.preprocess_source("#define TWO 2\nint x = TWO;\n", [], "nvcc")
    assert "int x = 2;" in pre
    with pytest.raises(drv.CompileError, match="preprocessing"):
        compiler.preprocess_source("#error boom\n", [], "nvcc")


def test_compiles_release_the_gil():
    source = unique(DOUBLE_ARRAY)
    done = threading.Event()
    thread = threading.Thread(
        target=lambda: (compiler.compile(source, arch="sm_90", backend="nvcc"), done.set())
    )
    ticks = 0
    thread.start()
    start = time.perf_counter()
    while not done.is_set() and time.perf_counter() - start < 60:
        ticks += 1
        time.sleep(0.001)
    thread.join()
    assert done.is_set()
    assert ticks > 20  # nvcc takes hundreds of ms; a held GIL would starve this loop


# ---- architecture --------------------------------------------------------------------------


def test_no_context_and_no_arch_is_a_clear_error():
    out = run_python(
        "from cuplug import compiler\n"
        "try:\n    compiler.compile('__global__ void k() {}')\n"
        "except Exception as e:\n    print(type(e).__name__, e)\n",
        CUPLUG_ARCH=None,
        CUPLUG_CUDA_DRIVER="/nonexistent/libcuda.so.1",
    )
    assert out.stdout.startswith("LogicError"), out.stdout + out.stderr
    assert "arch=" in out.stdout and "CUPLUG_ARCH" in out.stdout and "autoinit" in out.stdout


def test_cuplug_arch_sets_the_target(monkeypatch):
    monkeypatch.setenv("CUPLUG_ARCH", "sm_86")
    assert b".target sm_86" in compiler.compile(DOUBLE_ARRAY, target="ptx")
    monkeypatch.setenv("CUPLUG_ARCH", "8.9")
    assert b".target sm_89" in compiler.compile(DOUBLE_ARRAY, target="ptx")
    # arch= wins over the environment.
    assert b".target sm_80" in compiler.compile(DOUBLE_ARRAY, arch="sm_80", target="ptx")
    monkeypatch.setenv("CUPLUG_ARCH", "bogus")
    with pytest.raises(drv.ConfigError, match="CUPLUG_ARCH"):
        compiler.compile(DOUBLE_ARRAY, target="ptx")


def test_arch_choice_helper():
    supported = [75, 80, 86, 89, 90, 100, 120]
    assert _cc.choose_arch(90, supported) == (90, False, False)
    assert _cc.choose_arch(87, supported) == (86, True, False)
    assert _cc.choose_arch(130, supported) == (120, True, True)
    with pytest.raises(drv.ConfigError, match="older than the oldest"):
        _cc.choose_arch(61, supported)
    assert _cc.parse_arch("sm_90a") == (90, "a")
    assert _cc.parse_arch("compute_86") == (86, "")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_device_newer_than_the_compiler_is_clamped_with_one_warning(backend, monkeypatch):
    monkeypatch.delenv("CUPLUG_ARCH", raising=False)
    monkeypatch.setattr(compiling, "_current_context", lambda: object())
    monkeypatch.setattr(compiling, "_device_arch", lambda ctx: 990)  # no compiler knows sm_990
    monkeypatch.setattr(compiling, "_warned_clamps", set())
    newest = max(_cc.compiler_info(backend)[2])
    with pytest.warns(UserWarning, match=f"cannot compile for sm_990.*compute_{newest}"):
        result, target, _ = compiling.compile_source(DOUBLE_ARRAY, backend=backend, for_module=True)
    assert target == "ptx"  # a cubin of an older major version would not load
    assert f".target sm_{newest}".encode() in result.data
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiling.compile_source(DOUBLE_ARRAY, backend=backend, for_module=True)  # said once

    # Same major version, newer minor: a cubin of the newest minor below it runs there.
    monkeypatch.setattr(compiling, "_device_arch", lambda ctx: 99)
    supported = _cc.compiler_info(backend)[2]
    below = max(a for a in supported if a <= 99)
    with pytest.warns(UserWarning, match=f"sm_{below} code, which runs on this device"):
        result, target, _ = compiling.compile_source(DOUBLE_ARRAY, backend=backend, for_module=True)
    assert target == "cubin" and result.data[:4] == b"\x7fELF"


# ---- backend selection through the environment and the config file --------------------------

WHICH_BACKEND = (
    "from cuplug._compile import compiling\n"
    "source = '__global__ void k(float *a) { a[0] = 1; }'\n"
    "print(compiling.compile_source(source, arch='sm_90')[2])\n"
)


def test_environment_and_config_file_select_the_backend(tmp_path):
    out = run_python(WHICH_BACKEND, CUPLUG_COMPILER="nvcc", CUPLUG_CONFIG="")
    assert out.stdout.strip() == "nvcc", out.stderr
    out = run_python(WHICH_BACKEND, CUPLUG_COMPILER=None, CUPLUG_CONFIG="")
    assert out.stdout.strip() == "nvrtc", out.stderr
    config = tmp_path / "cuplug.toml"
    config.write_text('[backends]\ncompiler = "nvcc"\n')
    out = run_python(WHICH_BACKEND, CUPLUG_COMPILER=None, CUPLUG_CONFIG=str(config))
    assert out.stdout.strip() == "nvcc", out.stderr
    out = run_python(WHICH_BACKEND, CUPLUG_COMPILER="nvrtc", CUPLUG_CONFIG=str(config))
    assert out.stdout.strip() == "nvrtc", out.stderr  # environment over file


# ---- modules (a device: the real one, or the fake driver) -----------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("backend", BACKENDS)
def test_source_module_functions_and_lowered_names(ctx, backend):
    usable_or_skip(backend)
    mod = compiler.SourceModule(
        TEMPLATES,
        no_extern_c=True,
        backend=backend,
        name_expressions=["scale<float>", "scale<double>"],
    )
    assert mod.backend == backend
    assert mod.lowered_names["scale<float>"] == "_Z5scaleIfEvPT_S0_i"
    assert mod.get_function("scale<float>") is not None
    assert mod.get_function("_Z5scaleIdEvPT_S0_i") is not None
    with pytest.raises(drv.LogicError, match=r"name_expressions=\['scale<int>'\]"):
        mod.get_function("scale<int>")
    with pytest.raises(drv.CompileError, match="no_extern_c=True"):
        compiler.SourceModule(TEMPLATES, backend=backend, name_expressions=["scale<float>"])


@pytest.mark.gpu
def test_each_source_module_loads_a_module_of_its_own(ctx):
    # One compile (the same cache key), two loads: as PyCUDA, each SourceModule has its own
    # __constant__ / __device__ variables (compat/test_pycuda_differences_gpu.py runs both).
    a = compiler.SourceModule(DOUBLE_ARRAY)
    b = compiler.SourceModule(DOUBLE_ARRAY)
    assert a.key == b.key and a.module is not b.module
    c = compiler.SourceModule(DOUBLE_ARRAY, options=["-DX=1"])
    assert c.key != a.key


# ---- requests that say what they want, whatever the backend ----------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_code_and_keep_reach_each_backend_as_its_own_flags(backend, monkeypatch, capsys):
    monkeypatch.setattr(drv, "CUDA_DEBUGGING", True)
    result, _, _ = compiling.compile_source(unique(DOUBLE_ARRAY), code="sm_86", backend=backend)
    kept = capsys.readouterr().out.split("*** compiler output in ", 1)[1].strip()
    try:
        assert kept == result.kept_directory and os.path.isdir(kept)
        assert " -G" in result.command
        assert ("-arch=compute_86 -code=sm_86" if backend == "nvcc" else "-arch=sm_86") in (
            result.command
        )
    finally:
        import shutil

        shutil.rmtree(kept)


def test_a_third_compiler_backend_needs_no_change_to_the_compiler_module(tmp_path):
    build = os.environ.get("CUPLUG_BUILD_DIR")
    plugin = os.path.join(build or "", "tests", "fake_plugins", "libfake_good_compiler.so")
    if not build or not os.path.exists(plugin):
        pytest.skip("the fake compiler plugin is not built (set CUPLUG_BUILD_DIR)")
    out = run_python(
        "import warnings, cuplug, cuplug.driver as drv\n"
        "from cuplug._compile import compiling\n"
        f"cuplug.plugins.load({plugin!r})\n"
        "drv.CUDA_DEBUGGING = True\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    r, _, name = compiling.compile_source('__global__ void k() {}', arch='sm_90',\n"
        "                                          code='sm_90', backend='fake_compiler',\n"
        "                                          keep=True, nvcc='/some/nvcc')\n"
        "print(name, r.data.count(b'void k'), [str(x.message) for x in w])\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("fake_compiler 1 ['keep=True: the fake_compiler compiler"), (
        out.stdout
    )


# ---- messages that say what is wrong ---------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_error_lines_survive_a_slash_in_an_echoed_source_line(backend):
    source = "__global__ void k(int *x) {\n  x[0] = nope1 / 2;\n  x[1] = nope2;\n}\n"
    with pytest.raises(drv.CompileError) as info:
        compiler.compile(source, arch="sm_90", backend=backend, cache_dir=False)
    assert info.value.line_numbers == [2, 3]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_nul_byte_in_the_source_is_refused(backend):
    source = unique(DOUBLE_ARRAY) + "\0 lost"  # the NUL starts line 9
    with pytest.raises(ValueError, match=r"NUL byte \(at offset \d+, line 9\)"):
        compiler.compile(source, arch="sm_90", backend=backend)
    # The core refuses it too, for callers that are not this module.
    with pytest.raises(ValueError, match="NUL byte"):
        _cc.compile(_cc.CompileRequest(source, arch="sm_90", backend=backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_arch_the_compiler_lacks_is_named_with_those_it_has(backend):
    with pytest.raises(drv.ConfigError) as info:
        compiler.compile(unique(DOUBLE_ARRAY), arch="sm_9999", backend=backend)
    text = str(info.value)
    assert "cannot compile for arch sm_9999" in text and "it supports sm_" in text
    assert "the options ''" not in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unusable_tmpdir_is_named(backend):
    out = run_python(
        "from cuplug import compiler\n"
        "try:\n"
        f"    compiler.compile('__global__ void k() {{}}', arch='sm_90', backend={backend!r},\n"
        "                     keep=True)\n"
        "except Exception as e:\n"
        "    print(type(e).__name__, e)\n",
        TMPDIR="/nonexistent/tmp",
    )
    assert out.stdout.startswith("ConfigError"), out.stdout + out.stderr
    assert "/nonexistent/tmp" in out.stdout and "TMPDIR" in out.stdout


def test_a_relative_nvcc_path_is_the_callers(tmp_path, monkeypatch):
    import shutil

    real = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    (tmp_path / "bin").mkdir()
    wrapper = tmp_path / "bin" / "nvcc"
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    cubin = compiler.compile(unique(DOUBLE_ARRAY), arch="sm_90", backend="nvcc", nvcc="bin/nvcc")
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_log_that_is_not_utf8_is_still_readable(tmp_path, backend):
    (tmp_path / "latin1.h").write_bytes(b"#warning caf\xe9 au lait\n")
    source = unique('#include "latin1.h"\n__global__ void k(float *a) { a[0] = 1; }\n')
    with pytest.warns(compiler.CompilerWarning, match="caf\ufffd au lait"):
        compiler.compile(source, arch="sm_90", backend=backend, include_dirs=[tmp_path])
