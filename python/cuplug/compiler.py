"""PyCUDA's ``pycuda.compiler`` for cuplug: SourceModule, compile(), DynamicSourceModule.

Sources are compiled by the selected compiler backend (``nvrtc`` unless ``CUPLUG_COMPILER``, the
config file or ``cuplug.use(compiler=...)`` say otherwise; ``backend=`` picks one per call) and go
through the compile cache: in memory per request, on disk per content key under
``CUPLUG_CACHE_DIR`` (or ``~/.cache/cuplug``). Each ``SourceModule`` loads a module of its own,
as PyCUDA's does: two of the same source have separate ``__device__`` / ``__constant__``
variables.

The target architecture is the current device's, clamped to the newest the compiler supports
(with one warning; PTX the driver compiles when even the major version is too new); ``arch=`` or
``CUPLUG_ARCH`` override it. Without a context, give one of those.

This module is PyCUDA's names and their signatures; the work is in the ``cuplug._compile`` wing:
the compile step (``compiling``), the module classes (``source_module``), loaded modules
(``modules``), the link step (``linking``), the architecture choice (``arch``), error reports
(``errors``) and the nvcc tools (``nvcc``). ``DEFAULT_NVCC_FLAGS`` lives in
``cuplug._compile.settings``; assigning it here sets it there.
"""

from __future__ import annotations

from cuplug import _core
from cuplug._compile import settings as _settings
from cuplug._compile.compiling import CompilerWarning
from cuplug._compile.compiling import compile_source as _compile_source
from cuplug._compile.modules import CudaModule, clear_module_cache
from cuplug._compile.nvcc import get_nvcc_version, preprocess_source
from cuplug._compile.source_module import DynamicModule, DynamicSourceModule, SourceModule
from cuplug._public import forward_settings as _forward_settings
from cuplug._public import public_dir as _public_dir

CompileError = _core.CompileError
LogicError = _core.LogicError

__all__ = [
    "DEFAULT_NVCC_FLAGS",
    "CompileError",
    "CompilerWarning",
    "CudaModule",
    "DynamicModule",
    "DynamicSourceModule",
    "SourceModule",
    "clear_module_cache",
    "compile",
    "compile_plain",
    "get_nvcc_version",
    "preprocess_source",
]

#: Options used when a call gives ``options=None``: $CUPLUG_DEFAULT_NVCC_FLAGS, else
#: $PYCUDA_DEFAULT_NVCC_FLAGS, split on whitespace. Assigning it, as PyCUDA code does, sets what
#: every later compile uses (the value lives in cuplug._compile.settings; only annotated here).
DEFAULT_NVCC_FLAGS: list[str]
_forward_settings(__name__, _settings, ["DEFAULT_NVCC_FLAGS"])


def compile(
    source,
    nvcc="nvcc",
    options=None,
    keep=False,
    no_extern_c=False,
    arch=None,
    code=None,
    cache_dir=None,
    include_dirs=[],  # noqa: B006  (PyCUDA's signature; never mutated)
    target="cubin",
    backend=None,
):
    """Compiles CUDA C++ ``source`` to ``target`` ("cubin", "ptx", "fatbin" or "ltoir" (nvrtc
    only); a fatbin asked of the default NVRTC backend is made by nvcc) and returns the bytes.
    Unless ``no_extern_c``, the source is wrapped in ``extern "C"``. ``options=None`` means
    DEFAULT_NVCC_FLAGS. ``nvcc`` is the nvcc run when the backend is nvcc. ``cache_dir=False``
    keeps results off disk. Raises CompileError.

    Parameters
    ----------
    source : str
        The CUDA C++ source.
    nvcc : str
        The nvcc run by the nvcc backend.
    options : list[str] | None
        Compiler options; None: DEFAULT_NVCC_FLAGS.
    keep : bool
        Keep the compiler's files (their folder is printed).
    no_extern_c : bool
        Leave the source out of ``extern "C"``.
    arch : str | None
        The target, e.g. "sm_90"; None: the current device's.
    code : str | None
        nvcc's -code (nvcc only).
    cache_dir : str | bool | None
        The compile cache's folder; False: no disk cache; None: the default.
    include_dirs : list[str]
        Extra include folders.
    target : str
        "cubin", "ptx", "fatbin" (by nvcc, also when NVRTC is selected) or "ltoir" (nvrtc
        only).
    backend : str | None
        The compiler backend; None: the selected one.

    Returns
    -------
    bytes
        The compiled image.
    """
    result, _, _ = _compile_source(
        source,
        nvcc=nvcc,
        options=options,
        keep=keep,
        no_extern_c=no_extern_c,
        arch=arch,
        code=code,
        cache_dir=cache_dir,
        include_dirs=include_dirs,
        target=target,
        backend=backend,
    )
    return result.data


def compile_plain(source, options, keep, nvcc, cache_dir, target="cubin"):
    """PyCUDA's inner step: ``source`` as is (no extern "C"), ``options`` as given.

    Parameters
    ----------
    source : str
        The CUDA C++ source, as is.
    options : list[str]
        Compiler options.
    keep : bool
        Keep the compiler's files.
    nvcc : str
        The nvcc run by the nvcc backend.
    cache_dir : str | bool | None
        The compile cache's folder; False: no disk cache.
    target : str
        "cubin", "ptx", "fatbin" (by nvcc, also when NVRTC is selected) or "ltoir" (nvrtc
        only).

    Returns
    -------
    bytes
        The compiled image.
    """
    result, _, _ = _compile_source(
        source,
        nvcc=nvcc,
        options=options,
        keep=keep,
        no_extern_c=True,
        cache_dir=cache_dir,
        target=target,
    )
    return result.data


__dir__ = _public_dir(__all__)
