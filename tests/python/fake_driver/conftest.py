"""Fixtures of the fake driver's tests (defined in fake_support.py)."""

from fake_support import *  # noqa: F401,F403
