"""The ```python blocks of README.md and docs/*.md, as package/test_docs.py and
package/test_docs_gpu.py run them, each in a subprocess.

A block runs as it is, with no GPU, unless the line before its fence (an HTML comment, invisible
on GitHub and in the Sphinx site) says otherwise:

    <!-- doctest: gpu -->             needs a device: the real one, or the fake driver (marked gpu)
    <!-- doctest: real-gpu -->        needs kernels that run on a real GPU (marked real_gpu; run by
                                      test_docs_gpu.py)
    <!-- doctest: continue -->        runs after the page's previous block, in the same process
    <!-- doctest: requires=torch -->  skipped, with the reason, where that module is not installed
    <!-- doctest: illustrative: WHY --> not run: a fragment or a sketch, reported as skipped
                                      with WHY (never skipped without a reason)

Words combine with commas (`<!-- doctest: real-gpu, continue -->`). A block that continues a
block needing a GPU needs one too. A marker this file does not know fails its block, so a typo
cannot turn a test off.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
MARKER = re.compile(r"^<!--\s*doctest:\s*(.*?)\s*-->\s*$")
WORDS = {"gpu", "real-gpu", "continue"}


class Block:
    def __init__(self, page: str, line: int, source: str, words: list[str], why: str | None):
        self.page, self.line, self.source, self.words, self.why = page, line, source, words, why
        self.previous: Block | None = None  # the block a "continue" block runs after

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    def chain(self) -> list[Block]:
        blocks, b = [self], self
        while "continue" in b.words and b.previous is not None:
            b = b.previous
            blocks.insert(0, b)
        return blocks


def doc_pages() -> list[pathlib.Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def parse_marker(text: str) -> tuple[list[str], str | None]:
    """(words, why) of a marker's text; why is set for `illustrative: WHY`."""
    if text.startswith("illustrative"):
        why = text[len("illustrative") :].lstrip(":").strip()
        return ["illustrative"], why
    return [w.strip() for w in text.split(",") if w.strip()], None


def blocks_of(path: pathlib.Path) -> list[Block]:
    page = str(path.relative_to(ROOT))
    lines = path.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^(```+|~~~+)\s*(\S*)", lines[i])
        if not fence:
            i += 1
            continue
        start, ticks, lang = i, fence.group(1), fence.group(2)
        i += 1
        while i < len(lines) and not lines[i].startswith(ticks):
            i += 1
        if lang == "python":
            before = start - 1
            while before >= 0 and not lines[before].strip():
                before -= 1
            m = MARKER.match(lines[before]) if before >= 0 else None
            words, why = parse_marker(m.group(1)) if m else ([], None)
            block = Block(page, start + 1, "\n".join(lines[start + 1 : i]) + "\n", words, why)
            ran = [b for b in found if b.words != ["illustrative"]]
            if ran:
                block.previous = ran[-1]  # "continue" follows the previous block that runs
            found.append(block)
        i += 1
    return found


ALL_BLOCKS = [b for p in doc_pages() for b in blocks_of(p)]


def cases(real_gpu: bool):
    """The blocks as test parameters: those needing a real GPU (their own word or a block they
    continue) when real_gpu is true, unmarked there (the *_gpu.py file is marked real_gpu); the
    others when false, those needing a device marked gpu."""
    for b in ALL_BLOCKS:
        words = {w for blk in b.chain() for w in blk.words}
        if ("real-gpu" in words) != real_gpu:
            continue
        marks = [pytest.mark.gpu] if "gpu" in words and not real_gpu else []
        yield pytest.param(b, id=b.id, marks=marks)


def check_block(block: Block, tmp_path):
    """Runs the block (after the blocks it continues) in a subprocess that must exit 0."""
    if block.words == ["illustrative"]:
        if not block.why:
            pytest.fail(f"{block.id}: 'illustrative' needs a reason: illustrative: WHY")
        pytest.skip(f"illustrative: {block.why}")
    unknown = {w for w in block.words if w not in WORDS and not w.startswith("requires=")}
    assert not unknown, f"{block.id}: unknown doctest words {sorted(unknown)} (known: {WORDS})"
    chain = block.chain()
    if "continue" in block.words:
        assert len(chain) > 1, f"{block.id}: 'continue' but no block before it on the page"
    for word in sorted({w for b in chain for w in b.words if w.startswith("requires=")}):
        module = word[len("requires=") :]
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module}, which is not installed")
    script = tmp_path / "block.py"
    parts = [f"# {b.id}\n{b.source}" for b in chain]
    script.write_text("\n".join(parts))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CUPLUG_") or k in ("CUPLUG_BUILD_DIR", "CUPLUG_CUDA_DRIVER")
    }
    # A fresh cache and no config file: the block sees cuplug's defaults, not the user's.
    env.update(CUPLUG_CACHE_DIR=str(tmp_path / "cache"), CUPLUG_CONFIG="", HOME=str(tmp_path))
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (
        f"{block.id} failed (exit {result.returncode}):\n{script.read_text()}\n"
        f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
    )
