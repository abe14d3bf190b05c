"""The ```python blocks of README.md and docs/*.md run as tests, each in a subprocess: those that
need no GPU or any device (the fake driver will do) here, those marked `real-gpu` in
test_docs_gpu.py. The markers and how a block runs: support/doc_blocks.py.
"""

from __future__ import annotations

import pytest
from support.doc_blocks import ALL_BLOCKS, Block, cases, check_block


def test_docs_have_python_blocks():
    # The collection above found the pages' blocks (a change of the fence syntax would otherwise
    # leave this module testing nothing).
    assert len(ALL_BLOCKS) >= 20, [b.id for b in ALL_BLOCKS]
    assert any(not b.words for b in ALL_BLOCKS)


@pytest.mark.parametrize("block", list(cases(real_gpu=False)))
def test_doc_block(block: Block, tmp_path):
    check_block(block, tmp_path)
