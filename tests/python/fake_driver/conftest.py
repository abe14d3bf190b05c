"""Fixtures of the fake driver's tests (defined in support/fake_driver.py)."""

from support.fake_driver import *  # noqa: F401,F403
