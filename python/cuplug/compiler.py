"""PyCUDA's ``pycuda.compiler`` for cuplug: SourceModule, compile(), DynamicSourceModule.

Sources are compiled by the selected compiler backend (``nvrtc`` unless ``CUPLUG_COMPILER``, the
config file or ``cuplug.use(compiler=...)`` say otherwise; ``backend=`` picks one per call) and go
through the compile cache: in memory per request, on disk per content key under
``CUPLUG_CACHE_DIR`` (or ``~/.cache/cuplug``), and per context for loaded modules, so a second
``SourceModule`` of the same source in the same context returns the module already loaded (its
``__device__`` / ``__constant__`` variables included).

The target architecture is the current device's, clamped to the newest the compiler supports
(with one warning; PTX the driver compiles when even the major version is too new); ``arch=`` or
``CUPLUG_ARCH`` override it. Without a context, give one of those.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
import warnings

from cuplug import _core
from cuplug import config as _config

_cc = _core._compiler

CompileError = _core.CompileError
LogicError = _core.LogicError

__all__ = [
    "DEFAULT_NVCC_FLAGS",
    "CompileError",
    "CompilerWarning",
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

_ARCH_OPTIONS = ("-arch", "--gpu-architecture", "-gencode", "--generate-code")
_ERROR_LINE = re.compile(
    r"^(?:.*[/\\])?(?P<file>[^/\\()]+)\((?P<line>\d+)\): (?:catastrophic )?error", re.MULTILINE
)

_warned_clamps = set()
_lock = threading.Lock()


# ---- architecture ------------------------------------------------------------------------------


def _current_context():
    try:
        return _core.Context.get_current()
    except _core.Error:
        return None  # no driver, or it failed to start: compiling may still work with an arch


def _device_arch(ctx):
    """The current device's architecture as a number (90 for compute capability 9.0)."""
    major, minor = _core.Context.get_device().compute_capability()
    return major * 10 + minor


def _arch_number(text, where):
    try:
        number, suffix = _cc.parse_arch(str(text))
    except _core.ConfigError as e:
        raise _core.ConfigError(f"{where}: {e}") from None
    return number, suffix


def _has_arch_option(options):
    return any(o.split("=", 1)[0] in _ARCH_OPTIONS for o in options)


def _target_arch(arch, compiler_info, for_module):
    """(arch text for the request, use_ptx). Explicit arch= / CUPLUG_ARCH are used as given
    (checked against the device when loading a module); the device's is clamped to what the
    compiler (compiler_info() -> (name, version, supported archs)) supports."""
    if arch is None:
        env = os.environ.get("CUPLUG_ARCH")
        if env:
            number, suffix = _arch_number(env, "CUPLUG_ARCH")
            return f"sm_{number}{suffix}", False
    if arch is not None:
        number, suffix = _arch_number(arch, "arch")
        ctx = _current_context() if for_module else None
        if ctx is not None and number > _device_arch(ctx):
            warnings.warn(
                f"arch sm_{number} is newer than this device (sm_{_device_arch(ctx)}): "
                "the code will not load here",
                stacklevel=4,
            )
        return f"sm_{number}{suffix}", False
    ctx = _current_context()
    if ctx is None:
        raise LogicError(
            "cuplug.compiler: no GPU architecture to compile for: there is no current context. "
            "Make one first (import cuplug.autoinit), or name the architecture with arch='sm_90' "
            "or the environment variable CUPLUG_ARCH=sm_90"
        )
    device = _device_arch(ctx)
    _, version, supported = compiler_info()
    chosen, clamped, use_ptx = _cc.choose_arch(device, supported, version)
    if clamped:
        with _lock:
            first = (device, version) not in _warned_clamps
            _warned_clamps.add((device, version))
        if first:
            how = (
                f"PTX for compute_{chosen}, compiled by the driver for this device"
                if use_ptx
                else f"sm_{chosen} code, which runs on this device"
            )
            warnings.warn(
                f"{version} cannot compile for sm_{device} (this device); using {how}. Set arch= "
                "or CUPLUG_ARCH to choose another",
                stacklevel=4,
            )
    return f"sm_{chosen}", use_ptx


# ---- errors --------------------------------------------------------------------------------------


def _excerpt(source, lines, context=1, at_most=5):
    text = source.splitlines()
    out = []
    for n in lines[:at_most]:
        for i in range(max(1, n - context), min(len(text), n + context) + 1):
            out.append(f"{'>' if i == n else ' '}{i:5d} | {text[i - 1]}")
        out.append("")
    return "\n".join(out).rstrip()


def _dump_source(source):
    fd, path = tempfile.mkstemp(prefix="cuplug-failed-", suffix=".cu")
    with os.fdopen(fd, "w") as f:
        f.write(source)
    return path


def _enriched_compile_error(e, user_source, compiled_source, source_name, hint=None):
    """CompileError with .log, .source, .line_numbers (of errors, in the user's source) and an
    excerpt of those lines in the message."""
    log = e.stderr or ""
    lines = sorted(
        {int(m.group("line")) for m in _ERROR_LINE.finditer(log) if m.group("file") == source_name}
    )
    msg = e.msg
    if lines:
        plural = "s" if len(lines) > 1 else ""
        where = ", ".join(map(str, lines))
        msg += f"\n[errors at line{plural} {where}:\n{_excerpt(user_source, lines)}]"
    if hint:
        msg += "\n[" + hint + "]"
    dumped = None
    if os.environ.get("CUPLUG_DUMP_SOURCE_ON_ERROR", "") not in ("", "0"):
        dumped = _dump_source(compiled_source)
        msg += f"\n[source written to {dumped}]"
    err = CompileError(msg, command_line=e.command_line, stdout=e.stdout, stderr=log)
    err.log = log
    err.source = user_source
    err.line_numbers = lines
    err.source_file = dumped
    return err


# ---- compiling -----------------------------------------------------------------------------------


def _cache_location(cache_dir):
    """(memory, disk, directory) from cache_dir= and the environment."""
    if cache_dir is False:
        return True, False, None
    if os.environ.get("PYCUDA_DISABLE_CACHE") is not None:
        return True, False, None
    if cache_dir is None and not os.environ.get("CUPLUG_CACHE_DIR"):
        cache_dir = os.environ.get("PYCUDA_CACHE_DIR") or None
    return True, True, (None if cache_dir is None else os.fspath(cache_dir))


def _backend_options(backend, nvcc):
    """The nvcc path of a call applies when the backend it uses is nvcc."""
    if nvcc in (None, "nvcc"):
        return {}
    name = backend if backend is not None else _config.selected("compiler").name
    return {"nvcc": str(nvcc)} if name == "nvcc" else {}


def _keep_dir_of(result_command):
    m = re.match(r"cd '?([^' ]+)'? &&", result_command or "")
    return m.group(1) if m else None


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
    """Compiles through the cache; returns (CompileResult, target compiled, backend name)."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    user_source = source
    if not no_extern_c:
        # #line keeps the compiler's line numbers equal to the user's.
        source = 'extern "C" {\n#line 1\n' + source + "\n}\n"
    options = list(DEFAULT_NVCC_FLAGS if options is None else options)
    for o in options:
        if not isinstance(o, str):
            raise TypeError(f"options must be strings, got {o!r}")
    backend_options = _backend_options(backend, nvcc)
    info = []

    def compiler_info():  # asked only when needed: it costs a few microseconds
        if not info:
            info.extend(_cc.compiler_info(backend, backend_options))
        return info

    from cuplug import driver  # late: driver imports this package's launch layer

    debugging = driver.CUDA_DEBUGGING
    backend_name = compiler_info()[0] if (keep or debugging or code is not None) else None
    memory, disk, directory = _cache_location(cache_dir)
    if debugging:
        memory = disk = False
        keep = True
        options += ["-G"] if backend_name == "nvrtc" else ["-g", "-G"]
    if keep:
        memory = disk = False
        if backend_name == "nvcc":
            options.append("--keep")

    if code is not None:
        if backend_name == "nvcc":
            options.append("-code=" + code)
        elif arch is None:
            arch = code  # NVRTC has no -code: the real arch asked for is the one to build

    if _has_arch_option(options):
        arch_text, use_ptx = "", False
    else:
        arch_text, use_ptx = _target_arch(arch, compiler_info, for_module)
    if for_module and use_ptx and target == "cubin":
        target = "ptx"

    dirs = [os.fspath(d) for d in (include_dirs or ())]
    if _HAS_PACKAGE_INCLUDE:
        dirs.append(_PACKAGE_INCLUDE)
    request = _cc.CompileRequest(
        source,
        options=options,
        include_dirs=dirs,
        arch=arch_text,
        target=target,
        name_expressions=list(name_expressions or ()),
        relocatable=relocatable,
        backend=backend,
        backend_options=backend_options,
    )
    backend_name = request.backend
    try:
        result = _cc.compile(request, memory=memory, disk=disk, cache_dir=directory)
    except CompileError as e:
        hint = None
        if name_expressions and not no_extern_c:
            hint = (
                'templates cannot have extern "C" linkage: pass no_extern_c=True with '
                "name_expressions"
            )
        raise _enriched_compile_error(e, user_source, source, "kernel.cu", hint) from None

    if result.warning:
        warnings.warn(result.warning, stacklevel=3)
    if result.hit is None and result.log.strip():
        warnings.warn(
            CompilerWarning("The CUDA compiler succeeded, but said the following:\n" + result.log),
            stacklevel=3,
        )
    if keep:
        kept = _keep_dir_of(result.command) if backend_name == "nvcc" else None
        if kept is None:
            kept = tempfile.mkdtemp(prefix="cuplug-nvrtc-")
            with open(os.path.join(kept, "kernel.cu"), "w") as f:
                f.write(source)
            with open(os.path.join(kept, "kernel." + result.format), "wb") as f:
                f.write(result.data)
        print(f"*** compiler output in {kept}")
    return result, target, backend_name


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
    """Compiles CUDA C++ ``source`` to ``target`` ("cubin", "ptx", "fatbin" (nvcc only) or
    "ltoir" (nvrtc only)) and returns the bytes. Unless ``no_extern_c``, the source is wrapped
    in ``extern "C"``. ``options=None`` means DEFAULT_NVCC_FLAGS. ``nvcc`` is the nvcc run when
    the backend is nvcc. ``cache_dir=False`` keeps results off disk. Raises CompileError."""
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
    """PyCUDA's inner step: ``source`` as is (no extern "C"), ``options`` as given."""
    result, _, _ = _compile(
        source,
        nvcc=nvcc,
        options=list(options),
        keep=keep,
        no_extern_c=True,
        cache_dir=cache_dir,
        target=target,
    )
    return result.data


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


# ---- modules -------------------------------------------------------------------------------------

# (context handle, cache key) -> (Context, Module). The Context is kept so a detached context
# whose handle the driver reuses cannot hand out a module of the old one.
_modules = {}


def clear_module_cache():
    """Forgets the loaded modules kept per context (they unload when nothing else uses them)."""
    _modules.clear()


def _load_module(result, cached):
    ctx = _current_context()
    if ctx is None:
        ctx = _core.Context.get_current()  # raises the driver's error when there is no driver
    if ctx is None:
        raise LogicError(
            "cuplug.compiler: cannot load a module: there is no current context "
            "(import cuplug.autoinit, or make and push one)"
        )
    key = (ctx.handle, result.key)
    if cached:
        entry = _modules.get(key)
        if entry is not None and entry[0] is ctx:
            return entry[1]
    module = _core.module_from_buffer(result.data)
    if cached:
        # Entries of a context that was detached and whose handle the driver gave out again.
        for stale in [k for k, (c, _) in _modules.items() if k[0] == key[0] and c is not ctx]:
            del _modules[stale]
        _modules[key] = (ctx, module)
    return module


def _looks_like_cpp_name(name):
    return any(c in name for c in "<>:(")


class _NamedModule:
    """get_function / get_global that also accept the name expressions compiled for."""

    lowered_names: dict

    def get_function(self, name):
        lowered = self.lowered_names.get(name, name)
        try:
            return self.module.get_function(lowered)
        except LogicError as e:
            if lowered == name and _looks_like_cpp_name(name):
                raise LogicError(
                    f"{e} - {name!r} is a C++ name: pass name_expressions=[{name!r}] so the "
                    "compiler reports its mangled name"
                ) from None
            raise

    def get_global(self, name):
        lowered = self.lowered_names.get(name) or self.lowered_names.get("&" + name, name)
        return self.module.get_global(lowered)

    def get_texref(self, name):
        return self.module.get_texref(name)

    def get_surfref(self, name):
        return self.module.get_surfref(name)


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
        cached = not keep and not _core.backends.cache_disabled()
        self.module = _load_module(result, cached)


# ---- linking -------------------------------------------------------------------------------------


def _loaded_library_dirs():
    """Folders of the toolkit libraries this process has loaded (libnvrtc's holds cudadevrt)."""
    dirs = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if "/" in line else ""
                if "libnvrtc" in path or "libnvJitLink" in path or "libcudart" in path:
                    d = os.path.dirname(path)
                    if d not in dirs:
                        dirs.append(d)
    except OSError:
        pass
    return dirs


class DynamicModule(_NamedModule):
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
        ctx = _current_context()
        if ctx is not None:
            major, minor = _core.Context.get_device().compute_capability()
            if (major, minor) < (3, 5):
                raise _core.RuntimeError(
                    "dynamic parallelism needs compute capability 3.5 or newer, this device "
                    f"has {major}.{minor}"
                )
        self.nvcc = nvcc
        self.keep = keep
        self.no_extern_c = no_extern_c
        self.arch = arch
        self.code = code
        self.cache_dir = cache_dir
        self.include_dirs = list(include_dirs or ())
        self.cuda_libdir = cuda_libdir
        self.backend = backend
        self.linker = _core.Linker(message_handler, link_options, log_verbose)
        self.lowered_names = {}
        self.module = None

    def add_source(self, source, nvcc_options=None, name="kernel.ptx", name_expressions=None):
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

    def add_data(self, data, input_type, name="unknown"):
        self.linker.add_data(data, input_type, name)
        return self

    def add_file(self, filename, input_type):
        self.linker.add_file(filename, input_type)
        return self

    def _library_dirs(self):
        dirs = []
        if self.cuda_libdir:
            dirs.append(self.cuda_libdir)
        for var in ("CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"):
            if os.environ.get(var):
                dirs.append(os.path.join(os.environ[var], "lib64"))
        dirs += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
        dirs += _loaded_library_dirs()
        nvcc = shutil.which(self.nvcc) or shutil.which(os.environ.get("NVCC", "nvcc"))
        if nvcc:
            dirs.append(os.path.join(os.path.dirname(os.path.realpath(nvcc)), "..", "lib64"))
        dirs += ["/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu"]
        return dirs

    def add_stdlib(self, libname):
        """Adds the toolkit's static library lib<libname>.a (e.g. "cudadevrt")."""
        dirs = self._library_dirs()
        for d in dirs:
            path = os.path.join(d, f"lib{libname}.a")
            if os.path.isfile(path):
                return self.add_file(path, _core.jit_input_type.LIBRARY)
        raise _core.RuntimeError(
            f"lib{libname}.a not found in: {', '.join(dirs)}; pass cuda_libdir= or set CUDA_PATH"
        )

    def link(self):
        self.module = self.linker.link_module()
        self.linker = None
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
        options = list(DEFAULT_NVCC_FLAGS if options is None else options)
        # -lcudadevrt is nvcc's spelling of what add_stdlib does here.
        options = [o for o in options if o not in ("-lcudadevrt", "-rdc=true")]
        self.add_source(source, nvcc_options=options, name_expressions=name_expressions)
        self.add_stdlib("cudadevrt")
        self.link()
