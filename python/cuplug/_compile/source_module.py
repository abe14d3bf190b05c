"""PyCUDA's module classes: SourceModule (a source compiled and loaded in the current context),
DynamicModule (sources, PTX, cubins and libraries linked by the driver's linker) and
DynamicSourceModule (dynamic parallelism: relocatable code linked with cudadevrt).

Private code that compiles kernels (the array layer, the rng, the reductions) uses
``SourceModule`` from here; cuplug.compiler re-exports the three classes under PyCUDA's names.
The compile step is ``compiling.compile_source``; the link step ``linking.LinkedModule``, which
knows nothing of compiling, so DynamicModule (which compiles what it links) is built here on it.
"""

from __future__ import annotations

from cuplug import _core
from cuplug._compile import settings
from cuplug._compile.compiling import compile_source, string_list
from cuplug._compile.linking import LinkedModule
from cuplug._compile.modules import NamedModule, load_module

__all__ = ["DynamicModule", "DynamicSourceModule", "SourceModule"]


class SourceModule(NamedModule):
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
        include_dirs=[],  # noqa: B006  (PyCUDA's signature; never mutated)
        backend=None,
        name_expressions=None,
    ):
        result, target, backend_name = compile_source(
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


class DynamicModule(LinkedModule):
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
        self.include_dirs = string_list(include_dirs or (), "include_dirs", paths=True)
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
        result, _, _ = compile_source(
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
        options = string_list(
            settings.DEFAULT_NVCC_FLAGS if options is None else options, "options"
        )
        # -lcudadevrt is nvcc's spelling of what add_stdlib does here.
        options = [o for o in options if o not in ("-lcudadevrt", "-rdc=true")]
        self.add_source(source, nvcc_options=options, name_expressions=name_expressions)
        self.add_stdlib("cudadevrt")
        self.link()
