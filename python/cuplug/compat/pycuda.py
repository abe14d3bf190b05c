"""``import cuplug.compat.pycuda`` makes ``pycuda`` and ``pycuda.<name>`` resolve to cuplug.

A meta-path finder placed first on ``sys.meta_path`` answers every ``pycuda`` import with the
matching cuplug module object itself (not a copy), so ``pycuda.driver is cuplug.driver`` and
state such as the context stack is shared. It wins over an installed PyCUDA; import this before
anything imports pycuda. ``uninstall()`` takes it away again.

Without editing the program: ``python -m cuplug.compat.pycuda script.py [args]`` (or ``-m
module [args]``), ``CUPLUG_PYCUDA=1`` in the environment (honoured by the ``.pth`` file the
package installs, so child processes get it too), or ``pytest -p cuplug.compat.pycuda``.
"""

from __future__ import annotations

import os
import sys

from cuplug.compat._alias import (  # noqa: F401 - the alias's API, here under PyCUDA's switch
    PycudaAliasFinder,
    _finder,
    install,
    installed,
    target_name,
    uninstall,
)

# The switches that need no edit of the program: ``python -m cuplug.compat.pycuda SCRIPT|-m
# MODULE [ARGS]`` (main), ``CUPLUG_PYCUDA=1`` read by the .pth file the package installs, and the
# pytest plugin ``pytest -p cuplug.compat.pycuda`` (importing this module installs the alias;
# pytest_configure passes it on to worker processes).
ENV_VAR = "CUPLUG_PYCUDA"

USAGE = (
    "usage: python -m cuplug.compat.pycuda SCRIPT [ARGS...]\n"
    "       python -m cuplug.compat.pycuda -m MODULE [ARGS...]\n"
    "Runs a program written for PyCUDA with `pycuda` resolving to cuplug (child processes too, "
    "through CUPLUG_PYCUDA=1)."
)


def pytest_configure(config):
    """As a pytest plugin: child processes (xdist workers, multiprocessing, subprocesses) get
    the alias too, through the environment variable."""
    os.environ[ENV_VAR] = "1"


def main(argv=None) -> int:
    """Runs a script or ``-m`` module as ``python`` would (runpy: ``__main__``, ``sys.argv``,
    ``sys.path[0]``) with the alias installed, here and (CUPLUG_PYCUDA=1) in the processes it
    starts. Returns 0, or 2 for a usage error as python does; the program's own SystemExit
    passes through."""
    import runpy

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not args else sys.stdout)
        return 2 if not args else 0
    if args[0].startswith("-m"):
        module, rest = (args[0][2:], args[1:]) if args[0] != "-m" else (None, args[1:])
        if module is None:
            if not rest:
                print("Argument expected for the -m option\n" + USAGE, file=sys.stderr)
                return 2
            module, rest = rest[0], rest[1:]
        install()
        os.environ[ENV_VAR] = "1"
        sys.argv = [module, *rest]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    if args[0].startswith("-"):
        print(f"unknown option {args[0]!r}\n" + USAGE, file=sys.stderr)
        return 2
    script = args[0]
    if not os.path.exists(script):
        print(f"python -m cuplug.compat.pycuda: can't open file {script!r}", file=sys.stderr)
        return 2
    install()
    os.environ[ENV_VAR] = "1"
    sys.argv = args
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    # Run as a program, this file is __main__, not the module: the alias is the module's.
    from cuplug.compat import pycuda as _alias

    sys.exit(_alias.main())

install()
