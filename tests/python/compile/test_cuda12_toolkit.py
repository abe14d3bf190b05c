"""Kernels on a CUDA 12 driver (docs/install.md): a CUDA 12.x driver cannot load the cubins or PTX
CUDA 13's NVRTC makes, so cuplug opens the NVRTC of the driver's CUDA major version
(plugins/compiler_nvrtc/nvrtc_library.hpp) and leaves CUDA 13 toolkit folders out of its search
(cuplug/toolkit.hpp). The fake driver poses as CUDA 12.4 or 13.0 (FAKE_CUDA_DRIVER_VERSION) and,
like a real one, refuses PTX newer than its PTX ISA; each case runs in a fresh interpreter, since
the toolkit libraries are opened once per process.

NVIDIA's CUDA 12 wheels (what ``pip install cuplug[cu12]`` brings: nvidia-cuda-nvrtc-cu12,
-runtime-cu12, -cccl-cu12, nvidia-curand-cu12) are looked for in the site folder
$CUPLUG_CU12_SITE (``pip install --target``); .ci/run installs them there and sets
CUPLUG_REQUIRE_CU12=1, so that in CI their absence fails instead of skipping."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap

import pytest
from support import fakecuda

TOOLKIT_VARS = ("CUDAToolkit_ROOT", "CUDA_PATH", "CUDA_HOME", "CUDA_ROOT", "CUPLUG_TOOLKIT_WHEELS")


@pytest.fixture(scope="module")
def fake_driver() -> str:
    return fakecuda.fake_driver_or_skip()


@pytest.fixture(scope="module")
def cu12_site() -> str:
    site = os.environ.get("CUPLUG_CU12_SITE", "")
    if site and os.path.isfile(os.path.join(site, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12")):
        return site
    why = (
        "NVIDIA's CUDA 12 wheels are not installed: pip install --target DIR "
        "nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12 nvidia-cuda-cccl-cu12 "
        "nvidia-curand-cu12, then CUPLUG_CU12_SITE=DIR"
    )
    if os.environ.get("CUPLUG_REQUIRE_CU12") == "1":
        pytest.fail(why)
    pytest.skip(why)


def run(code: str, driver: str, version: int, tmp_path, site: str | None = None, **env) -> dict:
    """`code` in a fresh Python on the fake driver posing as CUDA `version`, with `site` (the CUDA
    12 wheels) on sys.path; returns the JSON it printed last."""
    full = {k: v for k, v in os.environ.items() if k not in TOOLKIT_VARS}
    paths = [*sys.path] if site is None else [*sys.path, site]
    full.update(
        PYTHONPATH=os.pathsep.join(p for p in paths if p),
        CUPLUG_CUDA_DRIVER=driver,
        FAKE_CUDA_DRIVER_VERSION=str(version),
        CUPLUG_CONFIG="",
        CUPLUG_CACHE_DIR=str(tmp_path / "cache"),
        **env,
    )
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


COMPILE = """
    import json, cuplug, cuplug.autoinit
    from cuplug import _core
    from cuplug import compiler
    from cuplug.compiler import SourceModule

    out = {"wanted": list(_core.backends.wanted_toolkit())}
    out["libraries"] = list(_core.backends.preload_toolkit_libraries())
    out["roots"] = [r for r, _ in _core.backends.toolkit_roots()]
    # What kernels include: CUB (CCCL) and cuRAND's device API, from this NVRTC's own headers.
    module = SourceModule(r'''
    #include <curand_kernel.h>
    #include <cub/warp/warp_reduce.cuh>
    extern "C" __global__ void k(float *x) {
      curandStatePhilox4_32_10_t s;
      curand_init(1, threadIdx.x, 0, &s);
      x[threadIdx.x] = curand_uniform(&s);
    }
    ''', no_extern_c=True)
    out["function"] = str(module.get_function("k"))
    ptx = compiler.compile('extern "C" __global__ void f(int *p) { *p = 1; }', target="ptx",
                           arch="compute_90").decode()
    out["ptx"] = [line for line in ptx.splitlines() if line.startswith(".version")][0]
    try:
        cuplug.driver.module_from_buffer(ptx.encode())
        out["ptx_loads"] = True
    except cuplug.driver.Error as e:
        out["ptx_loads"] = str(e)
    print(json.dumps(out))
"""


def test_a_cuda12_driver_compiles_with_cuda12s_nvrtc_and_headers_from_the_wheels(
    fake_driver, cu12_site, tmp_path
):
    out = run(COMPILE, fake_driver, 12040, tmp_path, cu12_site)
    assert out["wanted"] == [12, "the driver is CUDA 12.4 (R550)"]
    (nvrtc,) = [line for line in out["libraries"] if line.startswith("libnvrtc")]
    assert nvrtc.startswith(f"libnvrtc.so.12: {cu12_site}/nvidia/cuda_nvrtc/lib/libnvrtc.so.12")
    (curand,) = [line for line in out["libraries"] if line.startswith("libcurand")]
    assert curand.startswith(f"libcurand.so.10: {cu12_site}/nvidia/curand/lib/")
    # The CUDA 13 toolkit of this machine is left out of the search: its nvcc, headers and
    # libraries make what this driver cannot load.
    assert out["roots"] and all(r.startswith(cu12_site) for r in out["roots"]), out["roots"]
    assert out["function"] == "<cuplug Function 'k'>"
    # PTX has the NVRTC's ISA: NVRTC 12.9's is 8.8, which a 12.4 driver (ISA 8.4) refuses, as a
    # real one does; NVRTC 12.0's is 8.0, which it loads. cuplug's default target is a cubin for
    # the device's own architecture, which it loads from either.
    assert out["ptx"].startswith(".version 8.")
    if out["ptx"] > ".version 8.4":
        assert f"Unsupported {out['ptx']}; current version is '8.4'" in out["ptx_loads"]
    else:
        assert out["ptx_loads"] is True


BUILTINS = """
    import json, numpy as np, cuplug.autoinit
    from cuplug import gpuarray, _core
    from cuplug._kernels import engine
    x = gpuarray.to_gpu(np.ones(64, np.float32))
    z = gpuarray.to_gpu(np.ones(64, np.complex64))
    x * 2, z * 2, x.sum(), z.sum(), x.reshape(8, 8).sum(axis=0), gpuarray.cumsum(x)
    out = {"nvrtc": _core._compiler.compiler_info()[1].split(" + ")[0],
           "minimal": engine._compile_options([], None, True), "pch": engine.pch_options()}
    print(json.dumps(out))
"""


def test_cuplugs_own_kernels_compile_with_the_cuda12_nvrtc(fake_driver, cu12_site, tmp_path):
    # Elementwise (real and complex, whose sources include <cuda/std/complex>), the sum and
    # axis-sum engines and the scan: with the options the NVRTC in use takes (NVRTC 12.0 refuses
    # -minimal and -pch, and every built-in kernel failed to compile with it).
    out = run(BUILTINS, fake_driver, 12040, tmp_path, cu12_site)
    major, minor = (int(v) for v in out["nvrtc"].split()[1].split("."))
    assert major == 12
    assert out["minimal"] == (["-minimal"] if minor >= 4 else [])
    assert ("-pch" in out["pch"]) == (minor >= 8)


@pytest.mark.parametrize(
    ("version", "minimal", "pch"),
    [((12, 0), False, False), ((12, 3), False, False), ((12, 4), True, False),
     ((12, 6), True, False), ((12, 8), True, True), ((13, 0), True, True), (None, False, False)],
)  # fmt: skip
def test_builtin_kernel_options_follow_what_the_nvrtc_in_use_takes(
    monkeypatch, version, minimal, pch
):
    from support.compile_sources import builtin_options

    from cuplug._kernels import engine

    monkeypatch.setattr(engine, "_nvrtc_version", lambda: version)  # None: nvcc, or no NVRTC
    complex_arg = [engine.Arg("z", "complex64", True)]
    opts = engine._compile_options(complex_arg, ["-DX=1"], True)
    assert opts[0] == "-DX=1"
    assert ("-minimal" in opts) == minimal
    assert ("-pch" in opts) == pch == ("-pch" in engine.pch_options())
    assert ("-pch" in builtin_options("#include <cuda/std/complex>")) == pch


def test_a_cuda13_driver_keeps_cuda13s_nvrtc_with_the_cuda12_wheels_installed(
    fake_driver, cu12_site, tmp_path
):
    out = run(COMPILE, fake_driver, 13000, tmp_path, cu12_site)
    assert out["wanted"][0] == 13
    (nvrtc,) = [line for line in out["libraries"] if line.startswith("libnvrtc")]
    assert nvrtc.startswith("libnvrtc.so.13: ")
    assert out["ptx"].startswith(".version 9.")
    assert out["ptx_loads"] is True


def test_cuplug_toolkit_major_12_tries_the_cuda12_path_on_a_cuda13_driver(
    fake_driver, cu12_site, tmp_path
):
    """A CUDA 13 driver runs CUDA 12 code: CUPLUG_TOOLKIT_MAJOR=12 is how the GPU machine (R580)
    runs the whole suite through the CUDA 12 path. The compile cache keeps both apart: NVRTC's
    version is in every key."""
    first = run(COMPILE, fake_driver, 13000, tmp_path, cu12_site, CUPLUG_TOOLKIT_MAJOR="12")
    assert first["wanted"] == [12, "CUPLUG_TOOLKIT_MAJOR=12"]
    assert first["ptx"].startswith(".version 8.") and first["ptx_loads"] is True
    # Same cache folder, no override: NVRTC 13's PTX, not the cached NVRTC 12 one.
    second = run(COMPILE, fake_driver, 13000, tmp_path, cu12_site)
    assert second["ptx"].startswith(".version 9.")


def test_a_bad_cuplug_toolkit_major_is_named_and_ignored(fake_driver, tmp_path):
    code = """
        import json, logging, cuplug
        from cuplug import _core
        records = []
        logging.getLogger("cuplug").addHandler(logging.Handler())
        handler = logging.Handler()
        handler.emit = lambda r: records.append(r.getMessage())
        logging.getLogger("cuplug.compile").addHandler(handler)
        print(json.dumps({"wanted": list(_core.backends.wanted_toolkit()), "records": records}))
    """
    out = run(code, fake_driver, 13000, tmp_path, CUPLUG_TOOLKIT_MAJOR="11\x1b")
    assert out["wanted"] == [13, "the driver is CUDA 13.0 (R580)"]
    assert out["records"] == [
        "CUPLUG_TOOLKIT_MAJOR='11?' is not 12 or 13; ignored (the driver's CUDA version decides)"
    ]


def _nvrtc12_loadable() -> bool:
    try:
        ctypes.CDLL("libnvrtc.so.12")
    except OSError:
        return False
    return True


def test_a_cuda12_driver_without_cuda12s_nvrtc_says_what_to_install(fake_driver, tmp_path):
    if _nvrtc12_loadable():
        pytest.skip("a libnvrtc.so.12 is on the dynamic loader's path here")
    code = """
        import json, cuplug, cuplug.autoinit
        from cuplug.compiler import SourceModule
        try:
            SourceModule("__global__ void k(float *x) { x[0] = 1; }")
            print(json.dumps({"error": None}))
        except Exception as e:
            print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
    """
    out = run(code, fake_driver, 12040, tmp_path)
    error = out["error"]
    assert error is not None and error.startswith("ConfigError: ")
    assert "no NVRTC this driver can load code from (the driver is CUDA 12.4 (R550)" in error
    assert "libnvrtc.so.12" in error
    assert "pip install 'cuplug[cu12]'" in error
    assert "update the driver to R580 (CUDA 13) or newer" in error


def test_wheel_roots_are_each_sites_cuda13_folder_then_its_cuda12_component_folders(tmp_path):
    from cuplug._compile import toolkit

    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a / "nvidia" / "curand", a / "nvidia" / "cu13", b / "nvidia" / "cuda_nvrtc",
                   b / "nvidia" / "cuda_nvcc", b / "nvidia" / "cusparse"):  # fmt: skip
        folder.mkdir(parents=True)
    assert toolkit.wheel_roots([str(a), "", "relative", str(b)]) == [
        str(a / "nvidia" / "cu13"),
        str(a / "nvidia" / "curand"),
        str(b / "nvidia" / "cuda_nvrtc"),
        str(b / "nvidia" / "cuda_nvcc"),
    ]
