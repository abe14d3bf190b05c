"""Fixtures of the hardening tests: the one-pointer kernel of support/hardening.py, loaded in the
`ctx` fixture's context."""

from __future__ import annotations

import pytest


@pytest.fixture
def one_ptr(ctx):
    from support.hardening import one_ptr_kernel

    return one_ptr_kernel()
