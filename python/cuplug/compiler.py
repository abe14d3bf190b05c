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

This module holds the compile step, SourceModule and DynamicModule; the architecture choice
(_arch), error reports (_compile_errors), loaded modules (_loaded_modules), the link step (_linking)
and the nvcc tools (_nvcc) live in the private modules named, none of which imports this one.
"""

from __future__ import annotations

import os
import re
import warnings

from cuplug import _arch, _core
from cuplug._linking import LinkedModule as _LinkedModule
from cuplug._loaded_modules import CudaModule, clear_module_cache, load_module
from cuplug._loaded_modules import NamedModule as _NamedModule
from cuplug._loaded_modules import current_context as _current_context
from cuplug._nvcc import fatbin_backend as _fatbin_backend
from cuplug._nvcc import get_nvcc_version, preprocess_source
from cuplug._public import public_dir as _public_dir

_cc = _core._compiler

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


class CompilerWarning(UserWarning):
    """The compiler succeeded but printed diagnostics; the message holds them."""


def _default_flags():
    flags = os.environ.get("CUPLUG_DEFAULT_NVCC_FLAGS")
    if flags is None:
        flags = os.environ.get("PYCUDA_DEFAULT_NVCC_FLAGS", "")
    return [f for f in flags.split() if f.strip()]


#: Options used when a call gives ``options=None``: $CUPLUG_DEFAULT_NVCC_FLAGS, else
#: $PYCUDA_DEFAULT_NVCC_FLAGS, split on whitespace. Options given to a call replace them.
DEFAULT_NVCC_FLAGS = _default_flags()

# The package's own device headers, always on the include path (as PyCUDA's cuda/ folder).
_PACKAGE_INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
_HAS_PACKAGE_INCLUDE = os.path.isdir(_PACKAGE_INCLUDE)


# ---- the device compiled for ---------------------------------------------------------------------
# Looked up here at call time, so that tests can stand in a device by replacing _current_context,
# _device_arch and _warned_clamps on this module.

_warned_clamps = set()


def _device_arch(ctx):
    """The current device's architecture as a number (90 for compute capability 9.0)."""
    major, minor = _core.Context.get_device().compute_capability()
    return major * 10 + minor


def _current_device_arch():
    ctx = _current_context()
    return None if ctx is None else _device_arch(ctx)


# ---- compiling -----------------------------------------------------------------------------------


def _string_list(value, what, paths=False):
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


def _compile(
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

    What PyCUDA's arguments ask for (debug code, kept files, a real ``code`` architecture, the
    ``nvcc`` program) goes into the request as such; each compiler backend turns it into its own
    flags, so nothing here depends on which backend runs."""
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
    options = _string_list(DEFAULT_NVCC_FLAGS if options is None else options, "options")
    info = []

    def compiler_info():  # asked only when needed: it costs a few microseconds
        if not info:
            info.extend(_cc.compiler_info(backend))
        return info

    from cuplug import driver  # late: driver imports this package's launch layer

    debug = bool(driver.CUDA_DEBUGGING)
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

    dirs = _string_list(include_dirs or (), "include_dirs", paths=True)
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
            name_expressions=_string_list(name_expressions or (), "name_expressions"),
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
        from cuplug._compile_errors import enriched_compile_error  # only failures need it

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
    result, _, _ = _compile(
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
    result, _, _ = _compile(
        source,
        nvcc=nvcc,
        options=options,
        keep=keep,
        no_extern_c=True,
        cache_dir=cache_dir,
        target=target,
    )
    return result.data


# ---- SourceModule --------------------------------------------------------------------------------


class SourceModule(_NamedModule):
    """Compiles ``source`` and loads it in the current context (``.module``). Arguments as in
    PyCUDA, plus ``backend=`` ("nvrtc", "nvcc", None for the selected one) and
    ``name_expressions=["kernel<float>", ...]``, after which ``get_function("kernel<float>")``
    finds the instantiation (templates need ``no_extern_c=True``)."""

    def __init__(
        self,
        source,
        nvcc="nvcc",
        options=None,
        keep=False,
        no_extern_c=False,
        arch=None,
        code=None,
        cache_dir=None,
        include_dirs=[],  # noqa: B006
        backend=None,
        name_expressions=None,
    ):
        result, target, backend_name = _compile(
            source,
            nvcc=nvcc,
            options=options,
            keep=keep,
            no_extern_c=no_extern_c,
            arch=arch,
            code=code,
            cache_dir=cache_dir,
            include_dirs=include_dirs,
            target="cubin",
            backend=backend,
            name_expressions=name_expressions,
            for_module=True,
        )
        self.source = source
        self.backend = backend_name
        self.key = result.key
        self.target = target
        self.lowered_names = dict(result.lowered_names)
        self.module = load_module(result)


# ---- DynamicModule -------------------------------------------------------------------------------
# Here rather than in _linking: adding a source compiles it with _compile, and _linking must not
# import this module (which re-exports the classes as PyCUDA's pycuda.compiler does).


class DynamicModule(_LinkedModule):
    """Links several sources, PTX, cubins and libraries with the driver's linker (Linker):
    ``add_source`` / ``add_data`` / ``add_file`` / ``add_stdlib``, then ``link()``. Sources are
    compiled as relocatable PTX by the selected (or ``backend=``) compiler."""

    def __init__(
        self,
        nvcc="nvcc",
        link_options=None,
        keep=False,
        no_extern_c=False,
        arch=None,
        code=None,
        cache_dir=None,
        include_dirs=[],  # noqa: B006
        message_handler=None,
        log_verbose=False,
        cuda_libdir=None,
        backend=None,
    ):
        super().__init__(
            nvcc=nvcc,
            link_options=link_options,
            message_handler=message_handler,
            log_verbose=log_verbose,
            cuda_libdir=cuda_libdir,
        )
        self.keep = keep
        self.no_extern_c = no_extern_c
        self.arch = arch
        self.code = code
        self.cache_dir = cache_dir
        self.include_dirs = _string_list(include_dirs or (), "include_dirs", paths=True)
        self.backend = backend

    def add_source(self, source, nvcc_options=None, name="kernel.ptx", name_expressions=None):
        """Compiles CUDA source to PTX and adds it to the link.

        Parameters
        ----------
        source : str
            The CUDA C++ source.
        nvcc_options : list[str], optional
            Compiler options for this source.
        name : str
            The name the linker's messages give it.
        name_expressions : list[str], optional
            C++ names (templates, overloads) whose lowered names the module should know.
        """
        result, _, _ = _compile(
            source,
            nvcc=self.nvcc,
            options=nvcc_options,
            keep=self.keep,
            no_extern_c=self.no_extern_c,
            arch=self.arch,
            code=self.code,
            cache_dir=self.cache_dir,
            include_dirs=self.include_dirs,
            target="ptx",
            backend=self.backend,
            name_expressions=name_expressions,
            relocatable=True,
        )
        self.lowered_names.update(result.lowered_names)
        self.linker.add_data(result.data, _core.jit_input_type.PTX, name)
        return self


class DynamicSourceModule(DynamicModule):
    """A SourceModule whose kernels may launch kernels (dynamic parallelism): compiled as
    relocatable code and linked with the device runtime (cudadevrt)."""

    def __init__(
        self,
        source,
        nvcc="nvcc",
        options=None,
        keep=False,
        no_extern_c=False,
        arch=None,
        code=None,
        cache_dir=None,
        include_dirs=[],  # noqa: B006
        cuda_libdir=None,
        backend=None,
        name_expressions=None,
    ):
        super().__init__(
            nvcc=nvcc,
            link_options=None,
            keep=keep,
            no_extern_c=no_extern_c,
            arch=arch,
            code=code,
            cache_dir=cache_dir,
            include_dirs=include_dirs,
            message_handler=None,
            log_verbose=False,
            cuda_libdir=cuda_libdir,
            backend=backend,
        )
        options = _string_list(DEFAULT_NVCC_FLAGS if options is None else options, "options")
        # -lcudadevrt is nvcc's spelling of what add_stdlib does here.
        options = [o for o in options if o not in ("-lcudadevrt", "-rdc=true")]
        self.add_source(source, nvcc_options=options, name_expressions=name_expressions)
        self.add_stdlib("cudadevrt")
        self.link()


__dir__ = _public_dir(__all__)
