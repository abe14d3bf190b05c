"""ctypes prototypes of the driver's graphics interop entry points and the fake's GL stand-ins
(fake_cuda_gl_buffer / fake_cuda_gl_image), for fakecuda.PROTOTYPES and the gl tests."""

from __future__ import annotations

import ctypes
from ctypes import POINTER as P
from ctypes import c_int, c_long, c_size_t, c_uint, c_uint64, c_void_p

handle = c_void_p
handle_p = P(handle)

GL_TEXTURE_2D, GL_TEXTURE_2D_ARRAY, GL_TEXTURE_CUBE_MAP = 0x0DE1, 0x8C1A, 0x8513
CUDA_ERROR_ALREADY_MAPPED, CUDA_ERROR_NOT_MAPPED = 208, 211
CUDA_ERROR_NOT_MAPPED_AS_ARRAY, CUDA_ERROR_NOT_MAPPED_AS_POINTER = 212, 213

PROTOTYPES = {
    "cuGraphicsGLRegisterBuffer": [handle_p, c_uint, c_uint],
    "cuGraphicsGLRegisterImage": [handle_p, c_uint, c_uint, c_uint],
    "cuGraphicsUnregisterResource": [handle],
    "cuGraphicsMapResources": [c_uint, handle_p, handle],
    "cuGraphicsUnmapResources": [c_uint, handle_p, handle],
    "cuGraphicsResourceGetMappedPointer": [P(c_uint64), P(c_size_t), handle],
    "cuGraphicsSubResourceGetMappedArray": [handle_p, handle, c_uint, c_uint],
    "cuGraphicsResourceSetMapFlags": [handle, c_uint],
}


class FakeGL:
    """The fake driver's GL objects: names it hands to cuGraphicsGLRegister*, with storage."""

    def __init__(self, library: ctypes.CDLL):
        self._lib = library
        library.fake_cuda_gl_buffer.argtypes = [c_uint, c_size_t]
        library.fake_cuda_gl_buffer_data.argtypes = [c_uint]
        library.fake_cuda_gl_buffer_data.restype = c_void_p
        library.fake_cuda_gl_image.argtypes = [c_uint, c_uint, c_size_t, c_size_t, c_size_t]
        library.fake_cuda_gl_image.argtypes += [c_uint, c_int, c_uint]
        library.fake_cuda_live_graphics_resources.restype = c_long
        self._next = 1000

    def buffer(self, nbytes: int) -> int:
        self._next += 1
        assert self._lib.fake_cuda_gl_buffer(self._next, nbytes) == 0
        return self._next

    def delete_buffer(self, name: int) -> None:
        self._lib.fake_cuda_gl_buffer(name, 0)

    def data(self, name: int, nbytes: int) -> bytes:
        """What GL would read from buffer ``name``."""
        address = self._lib.fake_cuda_gl_buffer_data(name)
        assert address, f"no fake GL buffer {name}"
        return ctypes.string_at(address, nbytes)

    def image(self, target, width, height, depth=0, levels=1, fmt=0x01, channels=4) -> int:
        self._next += 1
        ok = self._lib.fake_cuda_gl_image(
            target, self._next, width, height, depth, levels, fmt, channels
        )
        assert ok == 0
        return self._next

    def live_resources(self) -> int:
        return self._lib.fake_cuda_live_graphics_resources()
