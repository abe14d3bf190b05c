"""Fixtures of the driver tests: ``two``, the primary contexts of devices 0 and 1, for the
multi-device tests on the fake driver (test_multidevice.py) and on GPUs
(test_multidevice_gpu.py)."""

import pytest

import cuplug.driver as drv


@pytest.fixture
def two():
    """The primary contexts of devices 0 and 1 (not pushed)."""
    drv.init()
    count = drv.Device.count()
    if count < 2:
        pytest.skip(f"needs two CUDA devices; this machine has {count}")
    return drv.Device(0).retain_primary_context(), drv.Device(1).retain_primary_context()
