"""``import cuplug.autoinit_private``: PyCUDA's pycuda.autoinit as it was: a new private context
(``Device.make_context()``) made current, popped at exit. ``context`` and ``device`` are this
module's attributes. Prefer cuplug.autoinit (the shared primary context) when the process also
uses PyTorch, CuPy or the CUDA runtime."""

from cuplug import _auto, driver, tools  # noqa: F401  (imported with it, as in PyCUDA)

context = device = None
_auto.start(globals(), primary=False)
