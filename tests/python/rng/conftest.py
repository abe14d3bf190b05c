"""Fixtures of the rng tests: host-memory generators of both rng backends and a clean backend
selection (the module-wide GPU context, gpu_ctx, is tests/python/conftest.py's)."""

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
