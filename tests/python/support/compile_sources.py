"""Kernel sources of the compiler tests (compile/test_compiler*.py) and unique(), which makes a
source new to every cache so that the compiler really runs."""

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
