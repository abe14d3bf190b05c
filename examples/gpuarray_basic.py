"""A first PyCUDA example, exactly as a PyCUDA user writes it, running on cuplug: one import
line in front makes every ``pycuda`` module cuplug's (``cuplug.compat.pycuda``), and the
rest is unchanged. Prints ``[ 2.  4.  6.  8. 10.]``.

Run it: ``PYTHONPATH=build/python python examples/gpuarray_basic.py`` (needs an NVIDIA GPU;
``bash tools/demo.sh`` runs it and says what it would do without one).
"""
# example-test: real-gpu
# ruff: noqa: E401, I001, F401  (the PyCUDA lines stay as a PyCUDA user writes them)

import cuplug.compat.pycuda  # pycuda.* are cuplug's modules from here on

# fmt: off
# The PyCUDA example, as written:
import pycuda.autoinit, pycuda.gpuarray as gpuarray, numpy as np
gpu_array = gpuarray.to_gpu(np.array([1, 2, 3, 4, 5], dtype=np.float32))
print((gpu_array * 2.0).get())          # [ 2.  4.  6.  8. 10.]
# fmt: on
