"""The ```python blocks of README.md and docs/*.md marked `real-gpu` (or continuing one that is)
run on a real GPU, each in a subprocess (the markers and how a block runs: support/doc_blocks.py;
the other blocks are test_docs.py's)."""

from __future__ import annotations

import pytest
from support.doc_blocks import Block, cases, check_block

pytestmark = pytest.mark.real_gpu


@pytest.mark.parametrize("block", list(cases(real_gpu=True)))
def test_doc_block(block: Block, tmp_path):
    check_block(block, tmp_path)
