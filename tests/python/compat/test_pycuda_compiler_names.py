"""PyCUDA's compiler names (issue 24, part B): compiler.CudaModule, the base class of its module
classes, and compile(target="fatbin") with the default NVRTC backend, which makes no fatbin."""

from __future__ import annotations

import logging
import shutil

import pytest

import cuplug.driver as drv
from cuplug import compiler

# ---- compiler.CudaModule -------------------------------------------------------------------------


@pytest.mark.gpu
def test_cuda_module_is_the_base_of_pycudas_module_classes(ctx):
    assert issubclass(compiler.SourceModule, compiler.CudaModule)
    assert issubclass(compiler.DynamicModule, compiler.CudaModule)
    mod = compiler.SourceModule("__global__ void k(float *x) { x[0] = 1; }")
    assert isinstance(mod, compiler.CudaModule)
    assert compiler.CudaModule.get_function(mod, "k") is not None

    class Bound(compiler.SourceModule):  # PyCUDA subclasses call its helpers
        def __init__(self, source):
            super().__init__(source)
            self._bind_module()

    bound = Bound("__device__ float g; __global__ void k2() { g = 1; }")
    ptr, size = bound.get_global("g")
    assert size == 4 and int(ptr) != 0
    with pytest.warns(UserWarning, match="higher than selected GPU"):
        bound._check_arch("sm_99")
    bound._check_arch(None)


# ---- compile(target="fatbin") under NVRTC --------------------------------------------------------


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs the toolkit's nvcc")
def test_fatbin_with_nvrtc_selected_is_made_by_nvcc(caplog):
    with caplog.at_level(logging.INFO, logger="cuplug"):
        image = compiler.compile(
            "__global__ void k(float *x) { x[0] = 1; }", target="fatbin", arch="sm_90",
            cache_dir=False,
        )  # fmt: skip
    assert image[:4] == (0xBA55ED50).to_bytes(4, "little"), "a fatbin"
    assert "NVRTC cannot produce a fatbin; compiling with nvcc" in caplog.text


def test_fatbin_without_nvcc_names_the_ways_out(monkeypatch):
    from cuplug import _core

    real = _core._compiler.compiler_info

    def no_nvcc(backend=None):
        if backend == "nvcc":
            raise _core.PluginError("compiler backend 'nvcc': nvcc not found")
        return real(backend)

    monkeypatch.setattr(_core._compiler, "compiler_info", no_nvcc)
    with pytest.raises(drv.NotSupportedError, match="nvrtc, produces cubin.*nvcc not found.*ptx"):
        compiler.compile("__global__ void k() {}", target="fatbin", arch="sm_90", cache_dir=False)
