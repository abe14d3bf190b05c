"""Fixtures of the rng tests: host-memory generators of both rng backends and a clean backend
selection (the module-wide GPU context, gpu_ctx, is tests/python/conftest.py's)."""

from __future__ import annotations

import pytest

import cuplug
from cuplug import _core


@pytest.fixture
def clean_selection(monkeypatch):
    """No explicit choices and no CUPLUG_<KIND> variables during the test; put back after."""
    for var in _core.backends.ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    state = cuplug.config.snapshot()
    cuplug.config.reset()
    yield
    cuplug.config.restore(state)
