"""Helpers shared by the hardening tests: a fresh interpreter run with a clean cuplug
environment, and a one-pointer kernel (PTX, no compiler needed) to launch arrays through."""

from __future__ import annotations

import os
import subprocess
import sys

from cuplug import _core

SELECTION_VARS = (
    *_core.backends.ENV_VARS.values(),
    "CUPLUG_PLUGIN_PATH",
    "CUPLUG_CONFIG",
    "CUPLUG_ARRAY_TUNE",
    "CUPLUG_SCAN_TUNE",
    "CUPLUG_REDUCE_THREADS",
)

ESC = "\x1b[2J\x07"  # clears a terminal and rings its bell, when printed raw


def run(code, tmp_path, **env):
    """``python <code...>`` in tmp_path (also its HOME) with none of the selection variables
    but ``env``, and no CUDA driver to find."""
    full = {k: v for k, v in os.environ.items() if k not in SELECTION_VARS}
    full.update(HOME=str(tmp_path), CUPLUG_CUDA_DRIVER="/nonexistent/libcuda.so.1")
    full.update(env)
    return subprocess.run(
        [sys.executable, *code],
        env=full,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry one_ptr(.param .u64 p) { ret; }
"""


def one_ptr_kernel():
    """The kernel ``one_ptr(u64 p)``, loaded in the current context."""
    import cuplug.driver as drv

    return drv.module_from_buffer(PTX).get_function("one_ptr")
