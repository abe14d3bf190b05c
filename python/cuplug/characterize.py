"""Properties of the platform and the current device (PyCUDA's pycuda.characterize)."""

import struct

import numpy as np

from cuplug._public import public_dir as _public_dir
from cuplug.tools import context_dependent_memoize


def platform_bits():
    """32 or 64: the width of a host pointer."""
    return struct.calcsize("@P") * 8


def has_stack():
    """Whether the current device has a call stack (compute capability 2.0 and up)."""
    from cuplug.driver import Context

    return Context.get_device().compute_capability() >= (2, 0)


def has_double_support():
    """Whether the current device does double precision (compute capability 1.3 and up)."""
    from cuplug.driver import Context

    return Context.get_device().compute_capability() >= (1, 3)


@context_dependent_memoize
def sizeof(type_name, preamble=""):
    """sizeof(type_name) in device code, after `preamble`: compiles and runs a 1-thread kernel.

    Parameters
    ----------
    type_name : str
        A C/C++ type.
    preamble : str
        Source before the kernel (includes, typedefs).

    Returns
    -------
    int
        The type's size in device code, in bytes.
    """
    import cuplug.driver as cuda
    from cuplug.compiler import SourceModule

    mod = SourceModule(
        f"""
    {preamble}
    extern "C"
    __global__ void write_size(size_t *output)
    {{
      *output = sizeof({type_name});
    }}
    """,
        no_extern_c=True,
    )
    output = np.zeros(1, dtype=np.uintp)
    buffer = cuda.mem_alloc(output.nbytes)
    mod.get_function("write_size")(buffer, block=(1, 1, 1), grid=(1, 1))
    cuda.memcpy_dtoh(output, buffer)
    return int(output[0])


__all__ = ["has_double_support", "has_stack", "platform_bits", "sizeof"]

__dir__ = _public_dir(__all__)
