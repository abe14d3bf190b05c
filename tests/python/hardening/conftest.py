"""Fixtures of the hardening tests: the one-pointer kernel of hardening_support, loaded in the
`ctx` fixture's context."""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


@pytest.fixture
def one_ptr(ctx):
    from hardening_support import one_ptr_kernel

    return one_ptr_kernel()
