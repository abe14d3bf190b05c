"""PyCUDA's ``pycuda.reduction``: ReductionKernel and the kernel factories of GPUArray's
reductions (the work is in cuplug._array.reduction_kernels and cuplug._codegen.reduction)."""

from __future__ import annotations

from cuplug._array import reduction_kernels as _impl
from cuplug._array.reduction_kernels import *  # noqa: F403 - the module's public names
from cuplug._public import public_dir as _public_dir

__all__ = list(_impl.__all__)

__dir__ = _public_dir(__all__)
