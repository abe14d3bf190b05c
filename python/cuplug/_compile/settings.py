"""The two process-wide compile settings that PyCUDA keeps as globals of its public modules:
``pycuda.compiler.DEFAULT_NVCC_FLAGS`` and ``pycuda.driver.CUDA_DEBUGGING``.

They live here, below the facades, so that the compile machinery reads them at call time without
importing a facade. ``cuplug.compiler`` and ``cuplug.driver`` forward the names to this module
(``cuplug._public.forward_settings``): assigning ``cuplug.compiler.DEFAULT_NVCC_FLAGS = [...]`` or
``cuplug.driver.CUDA_DEBUGGING = True``, as PyCUDA code does, changes what every later compile
uses, kernels of the array layer included.
"""

from __future__ import annotations

import os


def _default_flags() -> list[str]:
    flags = os.environ.get("CUPLUG_DEFAULT_NVCC_FLAGS")
    if flags is None:
        flags = os.environ.get("PYCUDA_DEFAULT_NVCC_FLAGS", "")
    return [f for f in flags.split() if f.strip()]


#: Options used when a call gives ``options=None``: $CUPLUG_DEFAULT_NVCC_FLAGS, else
#: $PYCUDA_DEFAULT_NVCC_FLAGS, split on whitespace. Options given to a call replace them.
DEFAULT_NVCC_FLAGS: list[str] = _default_flags()

#: When true, every compile disables the cache, keeps its files and builds with -G
#: (``driver.set_debugging()``, ``cuplug.debug``).
CUDA_DEBUGGING: bool = False
