"""PyCUDA's ``pycuda.scan`` (InclusiveScanKernel, ExclusiveScanKernel) and PyOpenCL's
GenericScanKernel (the work is in cuplug._kernels.scan and cuplug._codegen.scan)."""

from __future__ import annotations

from cuplug._kernels import scan as _impl
from cuplug._kernels.scan import *  # noqa: F403 - the module's public names
from cuplug._public import public_dir as _public_dir

__all__ = list(_impl.__all__)

__dir__ = _public_dir(__all__)
