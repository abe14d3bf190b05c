"""nvcc run as a tool, apart from the compiler backends: PyCUDA's get_nvcc_version() and
preprocess_source(), and the choice of nvcc for the fatbins NVRTC cannot make. Like the nvcc
backend, a run has a time limit ($CUPLUG_COMPILE_TIMEOUT, default 600 s, 0 for none) and takes
what nvcc started with it when it ends early (time limit, Ctrl-C)."""

from __future__ import annotations

import logging
import os
import shutil
import warnings

from cuplug import _core
from cuplug._compile import toolkit as _toolkit

# subprocess, signal and tempfile are imported where nvcc runs: importing them costs ~3 ms, and this
# module is imported with cuplug.compiler by the first array operation of every process.

CompileError = _core.CompileError


def _find_nvcc(nvcc):
    """An absolute path: preprocess_source runs nvcc in a temp folder. A path is taken as it is, a
    name other than "nvcc" is looked up on PATH, and "nvcc" (the default) is $NVCC, else bin/nvcc
    of the first folder of cuplug's toolkit search order (cuplug._compile.toolkit): the nvcc the
    nvcc backend runs."""
    if os.sep in nvcc:
        path = nvcc
    elif nvcc != "nvcc":
        path = shutil.which(nvcc)
    else:
        env = os.environ.get("NVCC")
        path = (shutil.which(env) if env else None) or _toolkit.find_program("nvcc")
    if path is None:
        looked = ", ".join(f"{root} ({origin})" for root, origin in _toolkit.roots()) or "none"
        raise _core.ConfigError(
            f"nvcc not found ({nvcc!r}; toolkit folders looked in: {looked}); set CUDA_PATH to "
            "the CUDA toolkit's folder, or NVCC, or pass nvcc="
        )
    return os.path.abspath(path)


def _timeout():
    text = os.environ.get("CUPLUG_COMPILE_TIMEOUT", "").strip()
    if not text:
        return 600.0
    try:
        seconds = float(text.removesuffix("s"))
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise _core.ConfigError(
            f"CUPLUG_COMPILE_TIMEOUT={text!r} is not a time limit; give seconds, e.g. 600, or 0 "
            "for no limit"
        )
    return seconds or None


def _run(cmd, cwd=None):
    """subprocess.run in a new process group, killed whole when the run ends early."""
    import subprocess

    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    limit = _timeout()
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise CompileError(
            f"{cmd[0]} did not finish within {limit:g} s and was stopped; raise the limit with "
            "CUPLUG_COMPILE_TIMEOUT (seconds, 0 for none)",
            cmd,
        ) from None
    except BaseException:  # Ctrl-C and the like: nothing of it may keep running
        _kill_group(proc)
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _kill_group(proc):
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


_nvcc_versions = {}


def get_nvcc_version(nvcc="nvcc"):
    """``nvcc --version``'s output (memoized); warns and says "nvcc unknown version" when nvcc
    cannot be run.

    Parameters
    ----------
    nvcc : str
        The nvcc to ask.

    Returns
    -------
    str
        Its version text.
    """
    if nvcc not in _nvcc_versions:
        try:
            p = _run([_find_nvcc(nvcc), "--version"])
            if p.returncode != 0:
                raise OSError(f"exit status {p.returncode}: {p.stderr.strip()}")
            out = p.stdout
        except (OSError, CompileError, _core.ConfigError) as e:
            warnings.warn(f"nvcc version could not be determined: {e}", stacklevel=2)
            out = "nvcc unknown version"
        _nvcc_versions[nvcc] = out
    return _nvcc_versions[nvcc]


def preprocess_source(source, options, nvcc):
    """``source`` after nvcc's preprocessor (nvcc -E) with ``options``.

    Parameters
    ----------
    source : str
        The CUDA C++ source.
    options : list[str]
        nvcc options (defines, include folders).
    nvcc : str
        The nvcc to run.

    Returns
    -------
    str
        The preprocessed source.
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cuplug-pp-") as tmp:
        path = os.path.join(tmp, "source.cu")
        with open(path, "w") as f:
            f.write(source)
        cmd = [_find_nvcc(nvcc), "--preprocess", *options, path, "--compiler-options", "-P"]
        p = _run(cmd, cwd=tmp)
        if p.returncode != 0:
            raise CompileError(
                f"nvcc preprocessing of {path} failed", cmd, stdout=p.stdout, stderr=p.stderr
            )
        return p.stdout.replace(path, "").replace("source.cu", "")


def fatbin_backend():
    """NVRTC makes no fatbin (nor does nvJitLink): a fatbin asked of the default NVRTC backend
    is made by nvcc, said on the cuplug logger; without nvcc the refusal names the ways out."""
    try:
        _core._compiler.compiler_info("nvcc")
    except Exception as e:  # noqa: BLE001 - any reason nvcc is unusable is the message
        raise _core.NotSupportedError(
            "target='fatbin': the selected compiler backend, nvrtc, produces cubin, PTX or "
            "LTO-IR, not fatbin, and the nvcc backend that makes fatbins is not usable here "
            f"({e}); install the CUDA toolkit's nvcc, or ask for target='cubin' (one "
            "architecture) or 'ptx' (any newer one)"
        ) from None
    logging.getLogger("cuplug.compile").info(
        "compile(target='fatbin'): NVRTC cannot produce a fatbin; compiling with nvcc"
    )
    return "nvcc"
