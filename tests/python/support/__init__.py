"""Helpers and shared data of cuplug's Python tests, imported as a package (``from support import
fakecuda``): tests/python is on sys.path because the root conftest.py lives there (pytest's
default "prepend" import mode puts a conftest's folder first on sys.path before importing it), so
no test or conftest needs a sys.path edit of its own.

- fakecuda, fakecuda_prototypes, fakecuda_objects, fakecuda_graphics: ctypes access to any CUDA
  driver library and to the fake driver's control API (tests/fake_driver); fakecuda re-exports
  the types, structs and PROTOTYPES of the others.
- fake_driver: the driver fixtures and ctypes helpers of tests/python/fake_driver.
- dtype_matrix: the dtypes the array tests sweep.
- array_gpu: operands of every layout and NumPy comparisons for the real-GPU array tests.
- reduction_reference, reduction_emulator, scan_emulation (+ cuda_emulation.hpp): NumPy's answers
  and generated kernels run on the host, for the reduction and scan tests.
- rng: host draws and the statistical tests of the rng tests.
- hardening: the hostile tests' kernel and subprocess helpers (issue 26).
- launch_kernels: the PTX, argument values and expected parameter bytes of launch/test_launch*.py.
- compile_sources: the kernel source and unique() of compile/test_compiler*.py.
- memcpy_data: seeded data and device bytes read back, for driver/test_memcpy*.py.
- surface_audit (+ surface_debt.txt): the public-surface audit of package/test_python_surface.py.
- examples, doc_blocks: what package/test_examples*.py and test_docs*.py run.
- threads: in_thread(), a call on a fresh thread (which has no current context).
"""
