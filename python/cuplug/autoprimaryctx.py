"""``import cuplug.autoprimaryctx``: like cuplug.autoinit, but with the device's primary context
(the one the CUDA runtime, PyTorch and CuPy use), retained and pushed; popped at exit."""

import atexit

import cuplug.driver as cuda
from cuplug.tools import clear_context_caches, make_default_context

cuda.init()


def _retain_primary_context(dev):
    ctx = dev.retain_primary_context()
    ctx.push()
    return ctx


context = make_default_context(_retain_primary_context)
device = context.get_device()


def _finish_up():
    global context
    # Pop only our own context: at exit, a stack the program left otherwise is not an error.
    if context is not None and cuda.Context.get_current() == context:
        context.pop()
    context = None
    clear_context_caches()


atexit.register(_finish_up)
