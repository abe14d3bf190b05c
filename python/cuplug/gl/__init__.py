"""``cuplug.gl``: OpenGL interop, PyCUDA's ``pycuda.gl`` API plus a modern form.

PyCUDA's API: ``init()``, ``make_context(dev, flags=0)``, ``graphics_map_flags``,
``RegisteredBuffer(gl_handle, flags)``, ``RegisteredImage(gl_handle, target, flags)``, their
``map(stream=None)`` giving a ``RegisteredMapping`` (``unmap(stream=None)``,
``device_ptr_and_size()``, ``array(index, level)``), and the deprecated ``BufferObject`` /
``BufferObjectMapping``. Beyond it: mappings are context managers (``with buf.map() as m:``
unmaps at the end), ``m.as_array(shape, dtype)`` is a GPUArray over a mapped buffer,
``map_all(*objects, stream=...)`` maps several in one driver call, and ``Window`` (a GLFW window
or a headless EGL context whose vertex / pixel buffers are GPUArrays written by kernels).

Registering and mapping go through the selected ``interop`` backend (the ``gl`` plugin); the GL
context that owns the objects must be current on the calling thread. Importing this module
raises ImportError with the reason when that backend is not available, as PyCUDA does when it was
built without GL.
"""

from __future__ import annotations

import enum
import warnings

from cuplug import plugins as _plugins
from cuplug._public import public_dir as _public_dir

_reason = _plugins.unavailable_reason("interop")
if _reason is not None:
    raise ImportError(f"cuplug.gl is not available: the interop backend is missing ({_reason})")

from cuplug.gl._registered import (  # noqa: E402 - only when the backend is there
    BufferObject,
    BufferObjectMapping,
    RegisteredBuffer,
    RegisteredImage,
    RegisteredMapping,
    RegisteredObject,
    map_all,
)
from cuplug.gl.window import Frame, Window, window_support  # noqa: E402


class graphics_map_flags(enum.IntEnum):  # noqa: N801 - PyCUDA's name
    """How CUDA uses a registered GL object (CU_GRAPHICS_REGISTER_FLAGS_*)."""

    NONE = 0
    READ_ONLY = 1
    WRITE_DISCARD = 2


def init():
    """PyCUDA's ``cuGLInit``: deprecated by CUDA (every context works with GL since CUDA 3.0);
    does nothing but warn."""
    warnings.warn(
        "cuplug.gl.init() is deprecated (cuGLInit does nothing since CUDA 3.0); any context "
        "works with GL",
        DeprecationWarning,
        stacklevel=2,
    )


def make_context(dev, flags=0):
    """A new context on ``dev``, pushed (PyCUDA's ``cuGLCtxCreate``, which CUDA deprecated: an
    ordinary context shares GL objects just as well, so that is what this makes).

    Parameters
    ----------
    dev : Device
        The device.
    flags : int
        ctx_flags, or-ed.

    Returns
    -------
    Context
        The new context, pushed.
    """
    return dev.make_context(flags)


__all__ = [
    "BufferObject",
    "BufferObjectMapping",
    "Frame",
    "RegisteredBuffer",
    "RegisteredImage",
    "RegisteredMapping",
    "RegisteredObject",
    "Window",
    "graphics_map_flags",
    "init",
    "make_context",
    "map_all",
    "window_support",
]

__dir__ = _public_dir(__all__)
