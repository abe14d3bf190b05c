"""Markers of the array tests: the `slow` marker for the tests over more than 2**32 elements
(one context per GPU test module is tests/python/conftest.py's gpu_ctx)."""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: arrays of more than 2**32 elements (minutes and 10+ GiB on a GPU)"
    )
