"""``import cuplug.gl.autoinit``: PyCUDA's ``pycuda.gl.autoinit``. Initialises the driver and makes
a default context current for GL interop (``context``, ``device``); popped at exit. A GL context
should be current before the import, as in PyCUDA (registration needs it, not this module)."""

import atexit

import cuplug.driver as cuda
import cuplug.gl as cudagl
from cuplug.tools import clear_context_caches, make_default_context

cuda.init()
assert cuda.Device.count() >= 1

context = make_default_context(lambda dev: cudagl.make_context(dev))
device = context.get_device()


def _finish_up():
    global context
    if context is not None and cuda.Context.get_current(adopt=True) == context:
        context.pop()
    context = None
    clear_context_caches()


atexit.register(_finish_up)
