"""PyCUDA's ``pycuda.scan`` (InclusiveScanKernel, ExclusiveScanKernel) and PyOpenCL's
GenericScanKernel (the work is in cuplug._kernels.scan, cuplug._kernels.generic_scan and
cuplug._codegen.scan)."""

from __future__ import annotations

# The array layer registers GPUArray with the C++ layer on import: the class of the results the
# engines make (cuplug._kernels.results), also for a program that imports only this module.
from cuplug import _array as _array_layer  # noqa: F401
from cuplug._kernels import generic_scan as _generic
from cuplug._kernels import scan as _impl
from cuplug._kernels.generic_scan import *  # noqa: F403 - the module's public names
from cuplug._kernels.scan import *  # noqa: F403 - the module's public names
from cuplug._public import public_dir as _public_dir

__all__ = sorted([*_impl.__all__, *_generic.__all__])

__dir__ = _public_dir(__all__)
