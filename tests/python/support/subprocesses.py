"""Running a snippet of Python in a fresh interpreter, for tests of what happens at import or at
exit (the alias, environment variables, lazy submodules)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def run_python(code, tmp_path, *, drop=(), **env):
    """Runs the dedented `code` with ``python -c`` in `tmp_path` (also HOME; no config file) and
    the environment less the variables named in `drop`, plus `env`; asserts it exits 0 and
    returns its standard output."""
    full = {k: v for k, v in os.environ.items() if k not in drop}
    full.update({"CUPLUG_CONFIG": "", "HOME": str(tmp_path)})
    full.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
