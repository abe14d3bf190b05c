"""``import cuplug.autoinit``: initialises the driver and makes the device's primary context
current (retained and pushed; popped at exit). ``context`` and ``device`` are this module's
attributes.

Unlike PyCUDA's pycuda.autoinit, which makes a private context, this shares the context that the
CUDA runtime, PyTorch, CuPy and JAX use, so that their streams, events and memory work with
cuplug's in one process (a private context makes their handles "invalid resource handle" errors
in cuplug and the other way round). ``import cuplug.autoinit_private`` keeps PyCUDA's behaviour.
"""

from cuplug import _auto, driver, tools  # noqa: F401  (imported with it, as in PyCUDA)

context = device = None
_auto.start(globals(), primary=True)
