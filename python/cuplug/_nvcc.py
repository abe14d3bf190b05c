"""nvcc run as a tool, apart from the compiler backends: PyCUDA's get_nvcc_version() and
preprocess_source()."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import warnings

from cuplug import _core

CompileError = _core.CompileError


def _find_nvcc(nvcc):
    path = shutil.which(nvcc) if os.sep not in nvcc else nvcc
    if path is None:
        env = os.environ.get("NVCC")
        path = shutil.which(env) if env else None
    if path is None:
        raise _core.ConfigError(f"nvcc not found ({nvcc!r}); set NVCC or pass nvcc=")
    return path


_nvcc_versions = {}


def get_nvcc_version(nvcc="nvcc"):
    """``nvcc --version``'s output (memoized); warns and says "nvcc unknown version" when nvcc
    cannot be run."""
    if nvcc not in _nvcc_versions:
        try:
            out = subprocess.run(
                [_find_nvcc(nvcc), "--version"], capture_output=True, text=True, check=True
            ).stdout
        except (OSError, subprocess.CalledProcessError, _core.ConfigError) as e:
            warnings.warn(f"nvcc version could not be determined: {e}", stacklevel=2)
            out = "nvcc unknown version"
        _nvcc_versions[nvcc] = out
    return _nvcc_versions[nvcc]


def preprocess_source(source, options, nvcc):
    """``source`` after nvcc's preprocessor (nvcc -E) with ``options``."""
    with tempfile.TemporaryDirectory(prefix="cuplug-pp-") as tmp:
        path = os.path.join(tmp, "source.cu")
        with open(path, "w") as f:
            f.write(source)
        cmd = [_find_nvcc(nvcc), "--preprocess", *options, path, "--compiler-options", "-P"]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        if p.returncode != 0:
            raise CompileError(
                f"nvcc preprocessing of {path} failed", cmd, stdout=p.stdout, stderr=p.stderr
            )
        return p.stdout.replace(path, "").replace("source.cu", "")
