"""PyCUDA's ``pycuda.elementwise``: ElementwiseKernel and the module generators behind it.

``ElementwiseKernel("float *z, float a, const float *x", "z[i] = a * x[i]")`` runs the
operation for every element. Beyond PyCUDA, vector arguments may be strided views (negative
strides too) and may broadcast against each other as in NumPy (``z`` of shape (3, 4), ``x`` of
shape (4,)): the array engine (cuplug._kernels.engine) lays each launch out, generates the
kernel for that layout (cuplug._codegen.elementwise), compiles it through the selected compiler
backend and the compile cache, and launches it from C++. ``i`` is the element's linear index in
C order over the broadcast shape. Operations that index other than ``name[i]`` (``x[n-1-i]``)
take contiguous arrays, as in PyCUDA. ``range=``/``slice=`` run over part of contiguous arrays.

The implementation is cuplug._kernels.elementwise (the engine: generate, compile, cache per
context, launch); this module keeps PyCUDA's names.

A compile error names the generated source line it is at (``CompileError``: the excerpt, and
``.source`` for the whole generated source).
"""

from __future__ import annotations

from cuplug._kernels import elementwise_copies as _copies
from cuplug._kernels import elementwise_factories as _factories
from cuplug._kernels.cargs import ScalarArg, VectorArg, parse_arguments
from cuplug._kernels.elementwise import (
    ElementwiseKernel,
    get_elwise_kernel,
    get_elwise_kernel_and_types,
    get_elwise_module,
    get_elwise_range_module,
)
from cuplug._kernels.elementwise_copies import *  # noqa: F403 - PyCUDA's get_*_kernel factories
from cuplug._kernels.elementwise_factories import *  # noqa: F403 - PyCUDA's get_*_kernel factories
from cuplug._public import public_dir as _public_dir

__all__ = [
    "ElementwiseKernel",
    "ScalarArg",
    "VectorArg",
    "get_elwise_kernel",
    "get_elwise_kernel_and_types",
    "get_elwise_module",
    "get_elwise_range_module",
    "parse_arguments",
    *_copies.__all__,
    *_factories.__all__,
]

__dir__ = _public_dir(__all__)
