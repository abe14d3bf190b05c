"""Registered GL objects and their mappings (PyCUDA's RegisteredBuffer / RegisteredImage /
RegisteredMapping and the deprecated BufferObject), over the selected interop backend."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

import cuplug.driver as _drv
from cuplug import _core

_interop = None


def _backend():
    """The selected interop backend's object, made on first use (it needs the driver)."""
    global _interop
    if _interop is None:
        _interop = _core.gl.Interop()
    return _interop


def _current_context():
    try:
        return _drv.Context.get_current(adopt=True)
    except _drv.Error:
        return None


@contextlib.contextmanager
def _under(ctx):
    """Runs the block with ``ctx`` current (pushed for the block when another one is)."""
    current = _current_context()
    if ctx is None or current == ctx:
        yield
        return
    ctx.push()
    try:
        yield
    finally:
        _drv.Context.pop()


class RegisteredObject:
    """A GL object registered with CUDA in the context current at registration (PyCUDA's base
    class). ``unregister()`` (or garbage collection) releases it, unmapping it first."""

    _resource = 0

    def __init__(self, gl_handle, resource):
        self._gl_handle = int(gl_handle)
        self._resource = resource
        self._context = _current_context()
        self._mapping = None

    def gl_handle(self):
        """The GL name it was registered with."""
        return self._gl_handle

    @property
    def handle(self):
        """The driver's CUgraphicsResource as an int (0 once unregistered)."""
        return self._resource

    def _live(self, what):
        if not self._resource:
            raise _core.LogicError(
                f"{type(self).__name__}.{what}: the object was unregistered; register the GL "
                "object again"
            )
        return self._resource

    def map(self, stream=None):
        """Maps it for CUDA work on ``stream`` (GL must not use it until unmap); returns the
        RegisteredMapping, which is also a context manager that unmaps.

        Parameters
        ----------
        stream : Stream | None
            The stream the mapping is ordered on.

        Returns
        -------
        RegisteredMapping
            The mapping.
        """
        resource = self._live("map")
        if self._mapping is not None and self._mapping._mapped:
            raise _core.LogicError(
                f"{type(self).__name__}.map: it is already mapped; unmap the mapping first "
                "(or use `with obj.map() as m:`)"
            )
        with _under(self._context):
            _backend().map([resource], stream)
        self._mapping = RegisteredMapping(self, stream)
        return self._mapping

    def unregister(self):
        """Releases the registration (a mapping still open is unmapped first). A second call does
        nothing."""
        resource, self._resource = self._resource, 0
        if not resource:
            return
        if self._mapping is not None:
            self._mapping._forget()
        try:
            with _under(self._context):
                _backend().unregister(resource)
        except _core.LogicError:
            pass  # its context is gone, and the registration with it

    def __del__(self):
        if self._resource:
            self.unregister()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unregister()


class RegisteredBuffer(RegisteredObject):
    """A GL buffer object (``glGenBuffers``) registered with CUDA (cuGraphicsGLRegisterBuffer);
    ``flags``: a graphics_map_flags value."""

    def __init__(self, gl_handle, flags=0):
        super().__init__(gl_handle, _backend().register_buffer(int(gl_handle), int(flags)))


class RegisteredImage(RegisteredObject):
    """A GL texture or renderbuffer registered with CUDA (cuGraphicsGLRegisterImage); ``target``:
    GL_TEXTURE_2D, GL_TEXTURE_RECTANGLE, GL_TEXTURE_CUBE_MAP, GL_TEXTURE_3D, GL_TEXTURE_2D_ARRAY
    or GL_RENDERBUFFER (the GLenum)."""

    def __init__(self, gl_handle, target, flags=0):
        super().__init__(
            gl_handle, _backend().register_image(int(gl_handle), int(target), int(flags))
        )
        self.target = int(target)


class RegisteredMapping:
    """A mapped RegisteredObject: device memory (buffers) or CUDA arrays (images) for CUDA work
    until ``unmap()``. As a context manager it unmaps when the block ends."""

    def __init__(self, obj, stream):
        self._object = obj
        self._stream = stream
        self._mapped = True
        self._arrays = []

    def _live(self, what):
        if not self._mapped:
            raise _core.LogicError(
                f"RegisteredMapping.{what}: the mapping was unmapped; map the object again"
            )
        return self._object._live(what)

    def _forget(self):
        """Ends the mapping's use from Python (the driver unmapped it, or will)."""
        self._mapped = False
        for array in self._arrays:
            array.free()  # borrowed: forgets the handle, so later use fails cleanly
        self._arrays = []

    def unmap(self, stream=None):
        """Unmaps it, ordered on ``stream`` (default: the stream it was mapped on). Kernels
        issued before on that stream finish before GL uses the object.

        Parameters
        ----------
        stream : Stream | None
            The stream the unmapping is ordered on; None: the mapping's.
        """
        resource = self._live("unmap")
        with _under(self._object._context):
            _backend().unmap([resource], self._stream if stream is None else stream)
        self._forget()

    def device_ptr_and_size(self):
        """(device address, bytes) of a mapped buffer."""
        resource = self._live("device_ptr_and_size")
        with _under(self._object._context):
            return _backend().mapped_pointer(resource)

    def array(self, index=0, level=0):
        """The CUDA ``Array`` of a mapped image at array index ``index`` (cube face or layer)
        and mip level ``level``; unusable once the mapping is unmapped.

        Parameters
        ----------
        index : int
            The array index (cube face or layer).
        level : int
            The mip level.

        Returns
        -------
        Array
            The CUDA array.
        """
        resource = self._live("array")
        with _under(self._object._context):
            array = _backend().mapped_array(resource, int(index), int(level), self)
        self._arrays.append(array)
        return array

    def as_array(self, shape, dtype, strides=None, order="C"):
        """A GPUArray over the mapped buffer (no copy): ``shape`` and ``dtype`` must fit in its
        bytes. Valid until unmap: do not keep it past the mapping.

        Parameters
        ----------
        shape : int | tuple[int, ...]
            The array's shape, in elements.
        dtype : numpy.typing.DTypeLike
            Its element type.
        strides : tuple[int, ...] | None
            Bytes between elements along each axis; None: contiguous.
        order : str
            'C' or 'F'.

        Returns
        -------
        GPUArray
            A view of the buffer.
        """
        from cuplug import gpuarray

        ptr, size = self.device_ptr_and_size()
        dtype = np.dtype(dtype)
        shape = (shape,) if np.isscalar(shape) else tuple(shape)
        need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if need > size:
            raise ValueError(
                f"as_array: shape {shape} of {dtype} needs {need} bytes; the mapped buffer has "
                f"{size}"
            )
        return gpuarray.GPUArray(shape, dtype, gpudata=ptr, base=self, strides=strides, order=order)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._mapped and self._object._resource:
            self.unmap()


@contextlib.contextmanager
def map_all(*objects, stream=None):
    """Maps several registered objects in one driver call (cheaper than one by one) and unmaps
    them together at the end of the block; yields their RegisteredMappings in order.

    Parameters
    ----------
    *objects : RegisteredObject
        The registered buffers and images.
    stream : Stream | None
        The stream mapping and unmapping are ordered on.

    Returns
    -------
    collections.abc.Iterator[list[RegisteredMapping]]
        A context manager yielding the mappings.
    """
    resources = [o._live("map") for o in objects]
    context = objects[0]._context if objects else None
    with _under(context):
        _backend().map(resources, stream)
    mappings = []
    for o in objects:
        o._mapping = RegisteredMapping(o, stream)
        mappings.append(o._mapping)
    try:
        yield mappings
    finally:
        live = [m for m in mappings if m._mapped and m._object._resource]
        if live:
            with _under(context):
                _backend().unmap([m._object._resource for m in live], stream)
        for m in mappings:
            m._forget()


class BufferObject:
    """PyCUDA's pre-CUDA-3 buffer object API (deprecated): a RegisteredBuffer underneath."""

    def __init__(self, handle):
        warnings.warn(
            "BufferObject is deprecated; use RegisteredBuffer", DeprecationWarning, stacklevel=2
        )
        self._buffer = RegisteredBuffer(handle)

    def handle(self):
        """The GL buffer's name (an int)."""
        return self._buffer.gl_handle()

    def unregister(self):
        """Unregisters the buffer from CUDA."""
        self._buffer.unregister()

    def map(self):
        """Maps the buffer for CUDA; returns a BufferObjectMapping."""
        return BufferObjectMapping(self._buffer.map())


class BufferObjectMapping:
    """A mapped BufferObject (deprecated API): ``device_ptr()``, ``size()``, ``unmap()``."""

    def __init__(self, mapping):
        self._mapping = mapping

    def unmap(self):
        """Gives the buffer back to GL."""
        self._mapping.unmap()

    def device_ptr(self):
        """The mapped buffer's device address (an int)."""
        return self._mapping.device_ptr_and_size()[0]

    def size(self):
        """The mapped buffer's size, in bytes."""
        return self._mapping.device_ptr_and_size()[1]
