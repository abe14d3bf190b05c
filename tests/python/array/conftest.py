"""Markers and fixtures of the array tests: the `slow` marker for the tests over more than 2**32
elements, and `env` for the fake-driver array tests (one context per GPU test module is
tests/python/conftest.py's gpu_ctx)."""

from __future__ import annotations

import gc

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: arrays of more than 2**32 elements (minutes and 10+ GiB on a GPU)"
    )


@pytest.fixture
def env(ctx, fake):
    """(cuplug.gpuarray, the fake driver) with its launch log cleared; collects the arrays a test
    left behind afterwards."""
    import cuplug.gpuarray as gpuarray

    fake.clear_launches()
    yield gpuarray, fake
    gc.collect()
