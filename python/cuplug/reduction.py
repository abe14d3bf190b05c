"""PyCUDA's ``pycuda.reduction``: ReductionKernel and the kernel factories of GPUArray's
reductions (the work is in cuplug._kernels.reduction and cuplug._codegen.reduction), and
PyCUDA's one-stage template factories (cuplug._kernels.reduction_factories)."""

from __future__ import annotations

# The array layer registers GPUArray with the C++ layer on import: the class of the results the
# engines make (cuplug._kernels.results), also for a program that imports only this module.
from cuplug import _array as _array_layer  # noqa: F401
from cuplug._kernels import reduction as _impl
from cuplug._kernels import reduction_factories as _factories
from cuplug._kernels.reduction import *  # noqa: F403 - the module's public names
from cuplug._kernels.reduction_factories import *  # noqa: F403 - the module's public names
from cuplug._public import public_dir as _public_dir

__all__ = sorted(_impl.__all__ + _factories.__all__)

__dir__ = _public_dir(__all__)
