"""PyCUDA's ``pycuda.reduction``: ReductionKernel and the kernel factories of GPUArray's
reductions (the work is in cuplug._array.reduction_kernels and cuplug._codegen.reduction)."""

from __future__ import annotations

from cuplug._array.reduction_kernels import (
    ReductionKernel,
    ScalarArg,
    VectorArg,
    get_all_kernel,
    get_any_kernel,
    get_dot_kernel,
    get_minmax_kernel,
    get_minmax_neutral,
    get_subset_dot_kernel,
    get_subset_minmax_kernel,
    get_subset_sum_kernel,
    get_sum_kernel,
)

__all__ = [
    "ReductionKernel",
    "ScalarArg",
    "VectorArg",
    "get_all_kernel",
    "get_any_kernel",
    "get_dot_kernel",
    "get_minmax_kernel",
    "get_minmax_neutral",
    "get_subset_dot_kernel",
    "get_subset_minmax_kernel",
    "get_subset_sum_kernel",
    "get_sum_kernel",
]
