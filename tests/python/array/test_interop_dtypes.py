"""DLPack's element types and NumPy's dtypes, without a GPU: every array dtype round-trips
through its (code, bits, lanes), the codes are DLPack's, and dtypes on either side without an
equivalent are BufferErrors that say why. Capsules and protocols: test_interop.py."""

import sys

import numpy as np
import pytest
from support.dtype_matrix import ARRAY_DTYPES

from cuplug._array import interop

ALL_DTYPES = ARRAY_DTYPES


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda t: np.dtype(t).name)
def test_dtype_round_trip(dtype):
    dtype = np.dtype(dtype)
    code, bits, lanes = interop.dlpack_dtype(dtype)
    assert bits == dtype.itemsize * 8 and lanes == 1
    assert interop.numpy_dtype(code, bits, lanes) == dtype


def test_dtype_codes_are_dlpacks():
    assert interop.dlpack_dtype(np.float32) == (2, 32, 1)
    assert interop.dlpack_dtype(np.bool_) == (6, 8, 1)
    assert interop.dlpack_dtype(np.complex64) == (5, 64, 1)
    assert interop.dlpack_dtype(np.uint16) == (1, 16, 1)


def test_dtypes_without_equivalent_are_buffer_errors():
    with pytest.raises(BufferError, match="no DLPack equivalent"):
        interop.dlpack_dtype(np.dtype([("a", np.int32)]))
    with pytest.raises(BufferError, match="native byte order"):
        interop.dlpack_dtype(np.dtype(">f4" if sys.byteorder == "little" else "<f4"))
    with pytest.raises(BufferError, match="bfloat16 has no NumPy"):
        interop.numpy_dtype(4, 16, 1)
    with pytest.raises(BufferError, match="vector type"):
        interop.numpy_dtype(2, 32, 4)
    with pytest.raises(BufferError, match="float4 has no NumPy"):
        interop.numpy_dtype(2, 4, 1)
