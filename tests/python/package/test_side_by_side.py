"""tools/side_by_side.py, which runs external suites on real PyCUDA and on cuplug: both runs seed
NumPy's and Python's global generators from each test's id, so a suite that draws its data
unseeded gives both sides the same inputs (docs/compat.md: reikna's FFT tests)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]

SUITE = """
import random
import zlib

import numpy as np


def test_draws_what_its_id_seeds(request):
    a, b = np.random.uniform(size=3), random.random()
    seed = zlib.crc32(request.node.nodeid.encode())
    np.random.seed(seed)
    random.seed(seed)
    assert (a == np.random.uniform(size=3)).all() and b == random.random()
"""


def test_both_runs_seed_each_test_from_its_id(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_draw.py").write_text(SUITE)
    real_site, deps, out = tmp_path / "real", tmp_path / "deps", tmp_path / "out"
    real_site.mkdir()
    deps.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "side_by_side.py"),
            str(out),
            "demo",
            str(real_site),
            str(deps),
            str(suite / "test_draw.py"),
            "--",
            "-p",
            "no:randomly",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    logs = "".join(p.read_text() for p in sorted(out.glob("demo-*.log")))
    assert proc.stdout.strip() == (
        "demo: PyCUDA 1 passed; cuplug 1 passed; 0 pass only on PyCUDA, 0 only on cuplug"
    ), proc.stdout + proc.stderr + logs
    assert proc.returncode == 0
