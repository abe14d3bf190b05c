"""Python-side memory helpers of cuplug.driver (PyCUDA's driver.py ones): whole-buffer copies."""

import numpy as np

from cuplug._core import _check_host_buffer, mem_alloc, memcpy_dtoh, memcpy_htod

__all__ = ["mem_alloc_like", "to_device", "from_device", "from_device_like"]


def mem_alloc_like(ary, stream=None):
    """Device memory of ``ary.nbytes`` bytes (uninitialised).

    Parameters
    ----------
    ary : numpy.ndarray
        An array whose nbytes gives the size.
    stream : Stream | None
        The stream the allocation (or copy) is ordered on.

    Returns
    -------
    DeviceAllocation
        The memory.
    """
    return mem_alloc(ary.nbytes, stream)


def to_device(bf_obj, stream=None):
    """A new DeviceAllocation holding a copy of the buffer ``bf_obj``.

    Non-contiguous buffers are copied in C order, as ``memoryview(bf_obj).tobytes()`` lays them out.

    Parameters
    ----------
    bf_obj : collections.abc.Buffer
        The host data.
    stream : Stream | None
        The stream the allocation (or copy) is ordered on.

    Returns
    -------
    DeviceAllocation
        The copy.
    """
    view = memoryview(bf_obj)
    if not view.contiguous:
        # tobytes() would turn object references into anonymous bytes memcpy_htod cannot refuse.
        _check_host_buffer(view, False, "to_device", "bf_obj", contiguous=False)
        view = memoryview(view.tobytes())
    result = mem_alloc(view.nbytes, stream)
    if view.nbytes:
        memcpy_htod(result, view)
    return result


def from_device(devptr, shape, dtype, order="C"):
    """A new ndarray of ``shape``/``dtype`` filled from device memory at ``devptr``.

    Parameters
    ----------
    devptr : DeviceAllocation | int
        The device memory.
    shape : int | tuple[int, ...]
        The result's shape, in elements.
    dtype : numpy.typing.DTypeLike
        Its element type.
    order : str
        'C' or 'F'.

    Returns
    -------
    numpy.ndarray
        The copy.
    """
    result = np.empty(shape, dtype, order)
    if result.nbytes:
        memcpy_dtoh(result, devptr)
    return result


def from_device_like(devptr, other_ary):
    """A new ndarray shaped like ``other_ary`` filled from device memory at ``devptr``.

    Parameters
    ----------
    devptr : DeviceAllocation | int
        The device memory.
    other_ary : numpy.ndarray
        The array whose shape and dtype the result takes.

    Returns
    -------
    numpy.ndarray
        The copy.
    """
    result = np.empty_like(other_ary)
    if result.nbytes:
        memcpy_dtoh(result, devptr)
    return result
