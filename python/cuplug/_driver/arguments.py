"""Kernel-launch helpers of cuplug.driver: PyCUDA's In / Out / InOut argument handlers.

``Function.__call__`` (C++) calls ``check()`` on every ArgumentHandler argument once all the
arguments are known good, then gives each the device pointer of ``get_device_alloc()``, calls
``pre_call(stream)`` before the launch and, for handlers that have ``post_call``, synchronizes
(when no stream is given) and calls ``post_call(stream)`` after it. So a handler whose array
cannot be copied fails before anything is allocated, copied or launched.
"""

from cuplug import _core
from cuplug._core import _check_host_buffer, mem_alloc, memcpy_dtoh, memcpy_htod

__all__ = ["ArgumentHandler", "In", "Out", "InOut"]


class ArgumentHandler:
    """A host array passed to a kernel through device memory made on first use."""

    def __init__(self, ary):
        self.array = ary
        self.dev_alloc = None

    def check(self):
        """Raises TypeError / ValueError when the array cannot be passed this way. A subclass
        that supplies its own memory (overrides get_device_alloc, as PyCUDA allows, maybe
        without calling __init__) has nothing to check here."""
        if type(self).get_device_alloc is not ArgumentHandler.get_device_alloc:
            return
        self._nbytes()

    def _nbytes(self):
        try:
            return self.array.nbytes
        except AttributeError:
            raise TypeError(
                f"could not determine array length of '{type(self.array)}': "
                "unsupported array type or not an array"
            ) from None

    def get_device_alloc(self):
        """The device memory standing for the array (allocated on first use, its nbytes)."""
        if self.dev_alloc is None:
            self.dev_alloc = mem_alloc(self._nbytes())
        return self.dev_alloc

    def pre_call(self, stream):
        """Runs before the launch: nothing here; In copies the array to the device.

        Parameters
        ----------
        stream : Stream | None
            The launch's stream (the copy is synchronous, as PyCUDA's).
        """
        pass


class In(ArgumentHandler):
    """Copied to the device before the launch (synchronously, as PyCUDA, even with a stream)."""

    def check(self):
        super().check()
        _check_host_buffer(self.array, False, type(self).__name__, "the array")

    def pre_call(self, stream):
        """Copies the array to the device before the launch.

        Parameters
        ----------
        stream : Stream | None
            The launch's stream (the copy is synchronous, as PyCUDA's).
        """
        memcpy_htod(self.get_device_alloc(), self.array)


class Out(ArgumentHandler):
    """Copied back to the host array after the launch."""

    def check(self):
        super().check()
        _check_host_buffer(self.array, True, type(self).__name__, "the array")

    def post_call(self, stream):
        """Copies the device memory back into the array after the launch.

        Parameters
        ----------
        stream : Stream | None
            The launch's stream (the copy is synchronous, as PyCUDA's).
        """
        memcpy_dtoh(self.array, self.get_device_alloc())


class InOut(In, Out):
    """Copied to the device before the launch and back after it."""


# Function.__call__ (C++) knows handlers by this class (python/src/hooks.hpp).
_core._register_hooks(argument_handler=ArgumentHandler)
