"""cuplug.compiler's DynamicModule and DynamicSourceModule: sources, PTX, cubins and libraries
linked with the driver's linker (dynamic parallelism links the device runtime, cudadevrt)."""

from __future__ import annotations

import os
import shutil

from cuplug import _core
from cuplug._loaded_modules import NamedModule, current_context


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


class DynamicModule(NamedModule):
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
        ctx = current_context()
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
        # Late: cuplug.compiler imports this module to re-export it.
        from cuplug import compiler

        result, _, _ = compiler._compile(
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
        from cuplug import compiler  # late, as in add_source; DEFAULT_NVCC_FLAGS may be reassigned

        options = list(compiler.DEFAULT_NVCC_FLAGS if options is None else options)
        # -lcudadevrt is nvcc's spelling of what add_stdlib does here.
        options = [o for o in options if o not in ("-lcudadevrt", "-rdc=true")]
        self.add_source(source, nvcc_options=options, name_expressions=name_expressions)
        self.add_stdlib("cudadevrt")
        self.link()
