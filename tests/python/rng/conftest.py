"""Fixtures of the rng tests: host-memory generators of both rng backends, a clean backend
selection, and one context per GPU test module."""

from __future__ import annotations

import pathlib
import sys

import pytest

import cuplug
from cuplug import _core

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


@pytest.fixture
def clean_selection(monkeypatch):
    """No explicit choices and no CUPLUG_<KIND> variables during the test; put back after."""
    for var in _core.backends.ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    state = cuplug.config.snapshot()
    cuplug.config.reset()
    yield
    cuplug.config.restore(state)


@pytest.fixture(scope="module")
def gpu_ctx(driver_mode):
    """A context for the whole module on a real GPU (kernels load once)."""
    if driver_mode != "real":
        pytest.skip("needs a real GPU (kernels that run)")
    import cuplug.driver as drv

    drv.init()
    ctx = drv.Device(0).make_context()
    try:
        yield ctx
    finally:
        drv.Context.pop()
        ctx.detach()
