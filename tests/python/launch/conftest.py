"""Fixtures of the fake-driver launch tests: the test kernels' module (support/launch_kernels.py's
PTX) and a small allocation, both in the session's context."""

from __future__ import annotations

import pytest
from support.launch_kernels import PTX

import cuplug.driver as drv


@pytest.fixture
def mod(ctx):
    return drv.module_from_buffer(PTX)


@pytest.fixture
def alloc(ctx):
    return drv.mem_alloc(256)
