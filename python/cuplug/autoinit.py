"""``import cuplug.autoinit``: initialises the driver and makes a default context current
(PyCUDA's pycuda.autoinit). ``context`` and ``device`` are this module's attributes; the context
is popped at exit."""

import atexit

import cuplug.driver as cuda
from cuplug.tools import clear_context_caches, make_default_context

cuda.init()

context = make_default_context()
device = context.get_device()


def _finish_up():
    global context
    # Pop only our own context: at exit, a stack the program left otherwise is not an error.
    if context is not None and cuda.Context.get_current() == context:
        context.pop()
    context = None
    clear_context_caches()


atexit.register(_finish_up)
