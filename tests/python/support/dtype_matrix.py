"""The dtypes every array test runs over: all that cuplug arrays support, written out here
rather than taken from cuplug, so that a dtype dropped from the implementation fails a test."""

import numpy as np

ARRAY_DTYPES = [
    np.dtype(t)
    for t in (
        np.bool_,
        np.int8,
        np.uint8,
        np.int16,
        np.uint16,
        np.int32,
        np.uint32,
        np.int64,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
]
