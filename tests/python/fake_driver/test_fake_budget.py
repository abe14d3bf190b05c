"""The fake driver stays within the size budget its README states (tests/fake_driver/README.md):
a fake that keeps growing becomes a second driver to maintain."""

from __future__ import annotations

import pathlib
import re

FAKE_DIR = pathlib.Path(__file__).resolve().parents[2] / "fake_driver"


def _budget() -> int:
    text = (FAKE_DIR / "README.md").read_text()
    match = re.search(r"Size budget: \*\*([\d,]+) lines\*\*", text)
    assert match, "tests/fake_driver/README.md has no 'Size budget: **N lines**' line"
    return int(match.group(1).replace(",", ""))


def _lines() -> int:
    sources = [p for p in FAKE_DIR.iterdir() if p.suffix in (".cpp", ".hpp", ".h")]
    return sum(len(p.read_text().splitlines()) for p in sources)


def test_fake_driver_is_within_its_size_budget():
    budget, lines = _budget(), _lines()
    assert lines <= budget, (
        f"tests/fake_driver has {lines} lines of C/C++, over its budget of {budget} "
        "(tests/fake_driver/README.md): simplify it, or raise the budget there with a reason"
    )
