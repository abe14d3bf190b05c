"""PyCUDA's compiler names (issue 24, part B): compiler.CudaModule, the base class of its module
classes."""

from __future__ import annotations

import pytest

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
