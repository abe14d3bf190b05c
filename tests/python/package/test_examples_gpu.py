"""Every script in examples/ that declares `real-gpu` in its header runs on a real GPU and exits 0
(the scripts and how one runs: support/examples.py; the `without-gpu` runs and the header check
are test_examples.py's)."""

import pytest
from support.examples import cases, check_example_runs

pytestmark = pytest.mark.real_gpu


@pytest.mark.parametrize("path, mode", list(cases(real_gpu=True)))
def test_example_runs(path, mode, tmp_path):
    check_example_runs(path, mode, tmp_path)
