"""PyCUDA's CUDA-array helpers of ``pycuda.driver`` (matrix_to_array, np_to_array,
gpuarray_to_array, make_multichannel_2d_array), and its texture-reference helpers, which CUDA 12
removed: they raise NotSupportedError naming TextureObject, their replacement."""

from __future__ import annotations

import numpy as np

from cuplug._core import (
    Array,
    ArrayDescriptor,
    ArrayDescriptor3D,
    LogicError,
    Memcpy2D,
    Memcpy3D,
    NotSupportedError,
    array3d_flags,
    array_format,
)
from cuplug._driver.textures import dtype_to_array_format

_TEXREF_GONE = (
    "texture references were removed in CUDA 12; make a TextureObject(array_or_gpuarray, "
    "address_mode=..., filter_mode=...) and pass it to the kernel as a cudaTextureObject_t "
    "argument (see docs/textures.md)"
)


def _check_order(order):
    if order not in ("C", "F"):
        raise LogicError("order must be either F or C")


def _format_channels(dtype):
    """PyCUDA's formats for np_to_array: doubles and complex numbers as 32-bit int halves."""
    dtype = np.dtype(dtype)
    if dtype == np.complex64 or dtype == np.float64:
        return array_format.SIGNED_INT32, 2
    if dtype == np.complex128:
        return array_format.SIGNED_INT32, 4
    return dtype_to_array_format(dtype), 1


def matrix_to_array(matrix, order, allow_double_hack=False):
    """A 2-D host matrix as a 2D Array (order "C": rows are rows; "F": columns are rows).

    Parameters
    ----------
    matrix : numpy.ndarray
        A 2-D host array.
    order : str
        "C" or "F".
    allow_double_hack : bool
        Store float64 as two int32 channels.

    Returns
    -------
    Array
        The CUDA array.
    """
    if order.upper() == "C":
        h, w = matrix.shape
        stride = 0
    elif order.upper() == "F":
        w, h = matrix.shape
        stride = -1
    else:
        raise LogicError("order must be either F or C")
    matrix = np.asarray(matrix, order=order)
    descr = ArrayDescriptor()
    descr.width = w
    descr.height = h
    if matrix.dtype == np.float64 and allow_double_hack:
        descr.format = array_format.SIGNED_INT32
        descr.num_channels = 2
    else:
        descr.format = dtype_to_array_format(matrix.dtype)
        descr.num_channels = 1
    ary = Array(descr)
    copy = Memcpy2D()
    copy.set_src_host(matrix)
    copy.set_dst_array(ary)
    copy.width_in_bytes = copy.src_pitch = copy.dst_pitch = matrix.strides[stride]
    copy.height = h
    copy(aligned=True)
    return ary


def _descriptor(shape, order, dtype, allow_surface_bind, what):
    """(descriptor, h, d, stride axis) for a 2-D or 3-D source, as PyCUDA lays it out."""
    _check_order(order)
    if len(shape) == 2:
        h, w = shape
        d = 1
        stride = 0 if order == "C" else -1
        descr = ArrayDescriptor3D() if allow_surface_bind else ArrayDescriptor()
        if allow_surface_bind:
            descr.depth = d
    elif len(shape) == 3:
        d, h, w = shape
        stride = 1
        descr = ArrayDescriptor3D()
        descr.depth = d
    else:
        raise LogicError(
            f"{what}: CUDA arrays of 2 or 3 dimensions are supported, got {len(shape)}"
        )
    descr.width = int(w)
    descr.height = int(h)
    descr.format, descr.num_channels = _format_channels(dtype)
    if allow_surface_bind:
        if len(shape) == 2:
            descr.flags |= array3d_flags.ARRAY3D_LAYERED
        descr.flags |= array3d_flags.SURFACE_LDST
    return descr, int(h), int(d), stride


def _copy_into(ary, set_source, row_bytes, h, d, three_d):
    copy = Memcpy3D() if three_d else Memcpy2D()
    set_source(copy)
    copy.set_dst_array(ary)
    copy.width_in_bytes = copy.src_pitch = row_bytes
    copy.height = h
    if three_d:
        copy.src_height = h
        copy.depth = d
        copy()
    else:
        copy(aligned=True)
    return ary


def np_to_array(nparray, order, allowSurfaceBind=False):  # noqa: N803 (PyCUDA's name)
    """A 2-D or 3-D host array as an Array (allowSurfaceBind: layered, SURFACE_LDST).

    Parameters
    ----------
    nparray : numpy.ndarray
        A 2-D or 3-D host array.
    order : str
        "C" or "F".
    allowSurfaceBind : bool
        Make a layered array with SURFACE_LDST.

    Returns
    -------
    Array
        The CUDA array.
    """
    descr, h, d, stride = _descriptor(
        nparray.shape, order, nparray.dtype, allowSurfaceBind, "np_to_array"
    )
    ary = Array(descr)
    three_d = allowSurfaceBind or len(nparray.shape) == 3
    return _copy_into(
        ary, lambda c: c.set_src_host(nparray), nparray.strides[stride], h, d, three_d
    )


def gpuarray_to_array(gpuarray, order, allowSurfaceBind=False):  # noqa: N803 (PyCUDA's name)
    """A 2-D or 3-D GPUArray as an Array, copied on the device.

    Parameters
    ----------
    gpuarray : GPUArray
        A 2-D or 3-D array.
    order : str
        "C" or "F".
    allowSurfaceBind : bool
        Make a layered array with SURFACE_LDST.

    Returns
    -------
    Array
        The CUDA array.
    """
    descr, h, d, stride = _descriptor(
        gpuarray.shape, order, gpuarray.dtype, allowSurfaceBind, "gpuarray_to_array"
    )
    ary = Array(descr)
    three_d = allowSurfaceBind or len(gpuarray.shape) == 3
    return _copy_into(
        ary, lambda c: c.set_src_device(gpuarray.ptr), gpuarray.strides[stride], h, d, three_d
    )


def make_multichannel_2d_array(ndarray, order):
    """An (h, w, channels) array (order "C") or (channels, w, h) (order "F") as a 2D Array of
    1, 2 or 4 channels.

    Parameters
    ----------
    ndarray : numpy.ndarray
        The host data with its channel axis.
    order : str
        "C" or "F".

    Returns
    -------
    Array
        The CUDA array.
    """
    if order.upper() == "C":
        h, w, num_channels = ndarray.shape
        stride = 0
    elif order.upper() == "F":
        num_channels, w, h = ndarray.shape
        stride = 2
    else:
        raise LogicError("order must be either F or C")
    descr = ArrayDescriptor()
    descr.width = w
    descr.height = h
    descr.format = dtype_to_array_format(ndarray.dtype)
    descr.num_channels = num_channels
    ary = Array(descr)
    copy = Memcpy2D()
    copy.set_src_host(ndarray)
    copy.set_dst_array(ary)
    copy.width_in_bytes = copy.src_pitch = copy.dst_pitch = ndarray.strides[stride]
    copy.height = h
    copy(aligned=True)
    return ary


class TextureReference:
    """PyCUDA's texture reference: gone with CUDA 12; constructing one says what to use."""

    def __init__(self, *args, **kwargs):
        raise NotSupportedError(f"TextureReference: {_TEXREF_GONE}")


def bind_array_to_texref(ary, texref):
    """Raises NotSupportedError: texture references were removed in CUDA 12 (use
    TextureObject).

    Parameters
    ----------
    ary : Array
        Ignored.
    texref : object
        Ignored.
    """
    raise NotSupportedError(f"bind_array_to_texref: {_TEXREF_GONE}")


def matrix_to_texref(matrix, texref, order):
    """Raises NotSupportedError: texture references were removed in CUDA 12 (use
    TextureObject).

    Parameters
    ----------
    matrix : numpy.ndarray
        Ignored.
    texref : object
        Ignored.
    order : str
        "C" or "F".
    """
    raise NotSupportedError(f"matrix_to_texref: {_TEXREF_GONE}")
