"""PyCUDA's ``pycuda.driver`` for cuplug: ``import cuplug.driver as cuda``.

Devices, contexts, streams, events, memory, copies, modules and kernel launch, with PyCUDA's
names, signatures, exception classes and messages. What goes beyond PyCUDA: ``with ctx:``,
contexts other libraries made current are used (Context.get_current() adopts them), objects are
usable from any thread (their context is pushed for the call), ``Stream(priority=...)``,
``Stream.__cuda_stream__``, ``Event.handle``, and no abort at exit with contexts left pushed.
"""

from warnings import warn

from cuplug import _core
from cuplug._core import *  # noqa: F403

# `import *` skips underscore names; the package's own modules use some of the extension's.
globals().update(
    {
        name: value
        for name, value in vars(_core).items()
        if name.startswith("_") and not name.startswith("__")
    }
)

# The extension's submodules (backend registry, allocator bindings) belong to cuplug.plugins
# and cuplug.memory, not to PyCUDA's driver namespace.
del allocators, backends  # noqa: F821

CUDA_DEBUGGING = False


def set_debugging(flag=True):
    """When set, cuplug.compiler disables its cache, keeps its files and compiles with -g -G."""
    global CUDA_DEBUGGING
    CUDA_DEBUGGING = flag


def _device_get_attributes(dev):
    """{device_attribute: value} for every attribute; the driver's refusals become warnings."""
    result = {}
    for att_name in dir(device_attribute):  # noqa: F405
        if not att_name[0].isupper():
            continue
        att_id = getattr(device_attribute, att_name)  # noqa: F405
        try:
            result[att_id] = dev.get_attribute(att_id)
        except LogicError as e:  # noqa: F405
            warn(f"CUDA driver raised '{e}' when querying '{att_name}' on '{dev}'", stacklevel=2)
    return result


def _device_getattr(dev, name):
    """dev.multiprocessor_count == dev.get_attribute(device_attribute.MULTIPROCESSOR_COUNT)."""
    try:
        attribute = getattr(device_attribute, name.upper())  # noqa: F405
    except AttributeError:
        raise AttributeError(
            f"'Device' object has no attribute '{name}' (nor is '{name.upper()}' a "
            "device_attribute)"
        ) from None
    return dev.get_attribute(attribute)


Device.get_attributes = _device_get_attributes  # noqa: F405
Device.__getattr__ = _device_getattr  # noqa: F405

# Memory, host memory and copies; modules, functions, launch and In/Out/InOut. Both are part of
# the driver module: a missing one is an ImportError here, not an AttributeError later.
from cuplug._launch import *  # noqa: E402, F403
from cuplug._memory import *  # noqa: E402, F403
