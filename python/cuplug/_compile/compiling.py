"""compile_source(): one CUDA source through the selected compiler backend and the compile cache.

This is the step behind cuplug.compiler's compile(), SourceModule and DynamicModule and behind
every kernel the array layer builds. What PyCUDA's arguments ask for (debug code, kept files, a
real ``code`` architecture, the ``nvcc`` program) goes into the request as such; each compiler
backend turns it into its own flags, so nothing here depends on which backend runs. The cache is
in memory per request, on disk per content key under ``CUPLUG_CACHE_DIR`` (or ``~/.cache/cuplug``);
each SourceModule loads its image with ``modules.load_module`` (a module of its own).

The target architecture is the current device's, clamped to the newest the compiler supports
(``arch``); the device is looked up here at call time through ``_current_context`` and
``_device_arch``, so that tests can stand in a device by replacing them on this module.
"""

from __future__ import annotations

import os
import re
import warnings

from cuplug import _core
from cuplug._compile import arch as _arch
from cuplug._compile import settings
from cuplug._compile.modules import current_context as _current_context
from cuplug._compile.nvcc import fatbin_backend as _fatbin_backend

_cc = _core._compiler

CompileError = _core.CompileError

__all__ = ["CompilerWarning", "compile_source", "string_list"]


class CompilerWarning(UserWarning):
    """The compiler succeeded but printed diagnostics; the message holds them."""


# The package's own device headers, always on the include path (as PyCUDA's cuda/ folder).
_PACKAGE_INCLUDE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include"
)
_HAS_PACKAGE_INCLUDE = os.path.isdir(_PACKAGE_INCLUDE)


# ---- the device compiled for ---------------------------------------------------------------------

_warned_clamps = set()


def _device_arch(ctx):
    """The current device's architecture as a number (90 for compute capability 9.0)."""
    major, minor = _core.Context.get_device().compute_capability()
    return major * 10 + minor


def _current_device_arch():
    ctx = _current_context()
    return None if ctx is None else _device_arch(ctx)


# ---- arguments -----------------------------------------------------------------------------------


def string_list(value, what, paths=False):
    """``value`` (a list, tuple or other iterable of str, or of path-like objects when ``paths``)
    as a list of str. A single string is refused: list() would split it into characters
    (PyCUDA's ``options[:]`` fails on one too, with an AttributeError)."""
    if isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError(
            f"{what} must be a list of strings, e.g. [{os.fspath(value)!r}], not the "
            f"{type(value).__name__} {value!r}; a single string would be taken one character "
            "at a time"
        )
    try:
        items = list(value)
    except TypeError:
        raise TypeError(
            f"{what} must be a list of strings, not {type(value).__name__} {value!r}"
        ) from None
    out = []
    for item in items:
        if paths and isinstance(item, os.PathLike):
            item = os.fspath(item)
        if not isinstance(item, str):
            raise TypeError(
                f"{what} must be a list of strings, but it holds {type(item).__name__} {item!r}"
            )
        out.append(item)
    return out


def _cache_location(cache_dir):
    """(memory, disk, directory) from cache_dir= and the environment."""
    if cache_dir is False:
        return True, False, None
    if os.environ.get("PYCUDA_DISABLE_CACHE") is not None:
        return True, False, None
    if cache_dir is None and not os.environ.get("CUPLUG_CACHE_DIR"):
        cache_dir = os.environ.get("PYCUDA_CACHE_DIR") or None
    return True, True, (None if cache_dir is None else os.fspath(cache_dir))


# ---- compiling -----------------------------------------------------------------------------------


def compile_source(
    source,
    *,
    nvcc="nvcc",
    options=None,
    keep=False,
    no_extern_c=False,
    arch=None,
    code=None,
    cache_dir=None,
    include_dirs=(),
    target="cubin",
    backend=None,
    name_expressions=None,
    relocatable=False,
    for_module=False,
):
    """Compiles through the cache; returns (CompileResult, target compiled, backend name).

    Arguments as cuplug.compiler.compile() takes them (``options=None``: DEFAULT_NVCC_FLAGS of
    ``settings``), plus ``name_expressions``, ``relocatable`` (for the linker) and
    ``for_module`` (the image is loaded in the current context: a device newer than the
    compiler knows gets PTX)."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    if "\0" in source:  # the core refuses it too, but only Python knows the user's line numbers
        at = source.index("\0")
        line = source.count("\n", 0, at) + 1
        raise ValueError(
            f"the source contains a NUL byte (at offset {at}, line {line}); a compiler would read "
            "it only up to there: remove it"
        )
    user_source = source
    if not no_extern_c:
        # #line keeps the compiler's line numbers equal to the user's.
        source = 'extern "C" {\n#line 1\n' + source + "\n}\n"
    options = string_list(settings.DEFAULT_NVCC_FLAGS if options is None else options, "options")
    info = []

    def compiler_info():  # asked only when needed: it costs a few microseconds
        if not info:
            info.extend(_cc.compiler_info(backend))
        return info

    debug = bool(settings.CUDA_DEBUGGING)
    keep = bool(keep) or debug  # PyCUDA keeps the files of a debug build
    memory, disk, directory = _cache_location(cache_dir)

    if _arch.has_arch_option(options):
        arch_text, use_ptx = "", False
    else:
        # The real architecture asked for (code=) is the one to build when arch= is not given.
        arch_text, use_ptx = _arch.target_arch(
            code if arch is None else arch,
            compiler_info,
            for_module,
            _current_device_arch,
            _warned_clamps,
        )
    if for_module and use_ptx and target == "cubin":
        target = "ptx"

    dirs = string_list(include_dirs or (), "include_dirs", paths=True)
    if _HAS_PACKAGE_INCLUDE:
        dirs.append(_PACKAGE_INCLUDE)

    def make_request(which):
        return _cc.CompileRequest(
            source,
            options=options,
            include_dirs=dirs,
            arch=arch_text,
            code=code or "",
            target=target,
            name_expressions=string_list(name_expressions or (), "name_expressions"),
            relocatable=relocatable,
            backend=which,
            debug=debug,
            keep_files=keep,
            # PyCUDA's default "nvcc" means the backend's own program.
            program="" if nvcc in (None, "nvcc") else os.fspath(nvcc),
        )

    request = make_request(backend)
    if target == "fatbin" and backend is None and request.backend == "nvrtc":
        request = make_request(_fatbin_backend())
    try:
        try:
            result = _cc.compile(request, memory=memory, disk=disk, cache_dir=directory)
        except CompileError as e:
            header = _header_for_nvcc(e, request, backend)
            if header is None:
                raise
            try:
                result = _cc.compile(
                    make_request("nvcc"), memory=memory, disk=disk, cache_dir=directory
                )
            except CompileError:
                raise e from None  # nvcc cannot either (a missing file of the user's): NVRTC's word
            except _core.ConfigError as refused:  # e.g. option text nvcc's shell would run
                raise _core.ConfigError(
                    f"NVRTC cannot compile this source (it includes <{header}>, a host header "
                    f"NVRTC does not have) and its fall-back, nvcc, refused the request: {refused}"
                ) from None
            _warn_nvcc_fallback(header)
    except CompileError as e:
        hint = None
        if name_expressions and not no_extern_c:
            hint = (
                'templates cannot have extern "C" linkage: pass no_extern_c=True with '
                "name_expressions"
            )
        from cuplug._compile.errors import enriched_compile_error  # only failures need it

        raise enriched_compile_error(e, user_source, source, "kernel.cu", hint) from None

    if result.warning:
        warnings.warn(result.warning, stacklevel=3)
    if result.hit is None and result.log.strip():
        warnings.warn(
            CompilerWarning("The CUDA compiler succeeded, but said the following:\n" + result.log),
            stacklevel=3,
        )
    if keep:
        if result.kept_directory:
            print(f"*** compiler output in {result.kept_directory}")
        else:
            warnings.warn(
                f"keep=True: the {request.backend} compiler backend kept no files", stacklevel=3
            )
    return result, target, request.backend


# 'cannot open source file "iostream"': NVRTC has no such header (cuplug's std headers cover
# the C and C++ ones device code uses; host-only ones, <iostream>, <vector>, are not among them).
_MISSING_HEADER = r'cannot open source file "([^"]+)"'  # compiled on the first failure only
_fallback_warned = set()


def _header_for_nvcc(error, request, backend):
    """The header NVRTC could not open when the default NVRTC backend failed for that reason and
    nvcc is there to try instead; None otherwise (a backend the caller chose is the one used).
    The cache key names the backend, so an nvcc result is cached apart from any NVRTC one."""
    if backend is not None or request.backend != "nvrtc":
        return None
    missing = re.findall(_MISSING_HEADER, error.stderr or "")
    if not missing:
        return None
    try:
        _cc.compiler_info("nvcc")
    except Exception:  # noqa: BLE001 - no usable nvcc: the NVRTC error is the one to show
        return None
    return missing[0]


def _warn_nvcc_fallback(header):
    """Once per header: why the compile was slower, and how to choose the backend."""
    if header in _fallback_warned:
        return
    _fallback_warned.add(header)
    warnings.warn(
        CompilerWarning(
            f"NVRTC cannot compile this source: it includes <{header}>, which NVRTC does not "
            "have (a host header); it was compiled with nvcc instead, which takes longer. To "
            "skip the NVRTC attempt choose the backend: cuplug.use(compiler='nvcc') or "
            "CUPLUG_COMPILER=nvcc; to stay with NVRTC, remove the include."
        ),
        stacklevel=4,
    )
