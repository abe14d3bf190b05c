"""What cuplug.autoinit, cuplug.autoprimaryctx and cuplug.autoinit_private share: a default
context made current at import (on $CUDA_DEVICE, ~/.cuda_device, or the first device that takes
one) and popped at exit. Imports the extension and the ``_driver`` wing only, no public module."""

from __future__ import annotations

import atexit

from cuplug import _core
from cuplug._driver.default_context import make_default_context
from cuplug._driver.memoize import clear_context_caches


def _retain_primary_context(dev):
    ctx = dev.retain_primary_context()
    ctx.push()
    return ctx


def start(module_globals: dict, primary: bool) -> None:
    """Makes the default context current and sets ``context`` and ``device`` in the calling
    module; ``primary``: the device's primary context (shared with the CUDA runtime, PyTorch,
    CuPy), else a private one (PyCUDA's pycuda.autoinit)."""
    _core.init()
    context = make_default_context(_retain_primary_context if primary else None)
    module_globals.update(context=context, device=context.get_device())

    def finish_up():
        ctx = module_globals.get("context")
        # Pop only our own context: at exit, a stack the program left otherwise is not an error.
        if ctx is not None and _core.Context.get_current(adopt=True) == ctx:
            ctx.pop()
        module_globals["context"] = None
        clear_context_caches()

    atexit.register(finish_up)
