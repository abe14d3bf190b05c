"""Kernel sources of the compiler tests (compile/test_compiler*.py), unique(), which makes a
source new to every cache so that the compiler really runs, and builtin_options(), the options
cuplug's own kernels compile with (the codegen tests compile generated sources the same way)."""

import uuid

# The seed's kernel (PyCUDA's README example).
DOUBLE_ARRAY = """
__global__ void double_array(float *a, int n) {
int idx = blockIdx.x * blockDim.x + threadIdx.x;
if (idx < n) {
a[idx] = a[idx] * 2.0;
}
}
"""


def unique(source):
    """The source made new to every cache, so the compiler really runs."""
    return f"// {uuid.uuid4()}\n{source}"


def builtin_options(source):
    """The options a built-in kernel of ``source`` compiles with under the selected compiler:
    NVRTC's -minimal and, where it includes <cuda/std/complex>, the precompiled header, each where
    the NVRTC in use takes it (cuplug._kernels.engine)."""
    from cuplug._kernels import engine

    opts = engine._compile_options([], None, True)
    return opts + engine.pch_options() if "cuda/std/complex" in source else opts
