"""Helpers of the copy tests (driver/test_memcpy*.py): seeded random data, and a device
allocation's bytes read back to the host."""

import numpy as np

import cuplug.driver as drv


def rng(seed=0):
    return np.random.default_rng(seed)


def from_dev(ptr, nbytes):
    out = np.empty(nbytes, np.uint8)
    drv.memcpy_dtoh(out, ptr)
    return out
