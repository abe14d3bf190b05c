"""Markers of the array tests: the `slow` marker for the tests over more than 2**32 elements
(one context per GPU test module is tests/python/conftest.py's gpu_ctx)."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: arrays of more than 2**32 elements (minutes and 10+ GiB on a GPU)"
    )
