"""Fixtures and markers of the array tests: one context per GPU test module, and the `slow`
marker for the tests over more than 2**32 elements."""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: arrays of more than 2**32 elements (minutes and 10+ GiB on a GPU)"
    )


@pytest.fixture(scope="module")
def gpu_ctx(driver_mode):
    """A context for the whole module on a real GPU (kernels compile and load once)."""
    if driver_mode != "real":
        pytest.skip("needs a real GPU (kernels that run)")
    from gpu_support import module_context

    yield from module_context()
