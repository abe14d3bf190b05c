"""Compatibility layers for code written against other CUDA packages.

``import cuplug.compat.pycuda`` makes ``import pycuda.driver``, ``pycuda.autoinit``,
``pycuda.compiler``, ... resolve to cuplug's modules, so PyCUDA programs run unchanged.
"""
