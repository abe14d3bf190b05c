"""PyCUDA's ``pycuda.debug``: ``python -m cuplug.debug SCRIPT [ARGS...]`` runs a script with
kernel debugging on (``driver.set_debugging()``: every kernel compiled with ``-G``, its files kept,
the compile cache bypassed), so cuda-gdb and compute-sanitizer can show source lines. Importing
this module turns debugging on too, as importing ``pycuda.debug`` does."""

from __future__ import annotations

import os
import runpy
import sys

from cuplug import driver

driver.set_debugging()

__all__ = ["main"]


def main(argv=None):
    """Runs ``argv[0]`` as ``__main__`` with ``argv`` as its ``sys.argv``; 2 without a script,
    1 when the script does not exist."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m cuplug.debug SCRIPT-TO-RUN [SCRIPT-ARGUMENTS]", file=sys.stderr)
        return 2 if not args else 0
    script = args[0]
    if not os.path.exists(script):
        print(f"Error: {script} does not exist", file=sys.stderr)
        return 1
    sys.argv = args
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
