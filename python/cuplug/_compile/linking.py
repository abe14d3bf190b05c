"""The link step under cuplug.compiler's DynamicModule: a driver Linker fed PTX, cubins and the
toolkit's static libraries (dynamic parallelism links the device runtime, cudadevrt), and the
search for those libraries. Knows nothing of compiling, so cuplug.compiler builds on it without
an import cycle."""

from __future__ import annotations

import os

from cuplug import _core
from cuplug._compile import toolkit as _toolkit
from cuplug._compile.modules import NamedModule, current_context


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


def _check_dynamic_parallelism():
    ctx = current_context()
    if ctx is not None:
        major, minor = _core.Context.get_device().compute_capability()
        if (major, minor) < (3, 5):
            raise _core.RuntimeError(
                "dynamic parallelism needs compute capability 3.5 or newer, this device "
                f"has {major}.{minor}"
            )


class LinkedModule(NamedModule):
    """A module linked by the driver's linker (Linker) from ``add_data`` / ``add_file`` /
    ``add_stdlib`` inputs, then ``link()``. cuplug.compiler.DynamicModule adds sources."""

    def __init__(
        self,
        nvcc="nvcc",
        link_options=None,
        message_handler=None,
        log_verbose=False,
        cuda_libdir=None,
    ):
        _check_dynamic_parallelism()
        self.nvcc = nvcc
        self.cuda_libdir = cuda_libdir
        self.linker = _core.Linker(message_handler, link_options, log_verbose)
        self.lowered_names = {}
        self.module = None

    def add_data(self, data, input_type, name="unknown"):
        self.linker.add_data(data, input_type, name)
        return self

    def add_file(self, filename, input_type):
        self.linker.add_file(filename, input_type)
        return self

    def _library_dirs(self):
        """cuda_libdir=, then the folders of the toolkit libraries this process loaded (the
        toolkit whose NVRTC compiled), then every folder of cuplug's toolkit search order."""
        dirs = [self.cuda_libdir] if self.cuda_libdir else []
        for d in _loaded_library_dirs() + _toolkit.library_dirs():
            if d not in dirs:
                dirs.append(d)
        return dirs

    def add_stdlib(self, libname):
        """Adds the toolkit's static library lib<libname>.a (e.g. "cudadevrt")."""
        dirs = self._library_dirs()
        for d in dirs:
            path = os.path.join(d, f"lib{libname}.a")
            if os.path.isfile(path):
                return self.add_file(path, _core.jit_input_type.LIBRARY)
        hint = "pass cuda_libdir= or set CUDA_PATH"
        if libname == "cudadevrt":
            # NVIDIA's CUDA 12 runtime wheel carries it from 12.9 on (12.0 and 12.6 do not); the
            # CUDA 13 one does.
            hint += (
                ' to a toolkit that has it, or pip install "nvidia-cuda-runtime-cu12>=12.9" '
                "(CUDA 12) / nvidia-cuda-runtime (CUDA 13)"
            )
        raise _core.RuntimeError(f"lib{libname}.a not found in: {', '.join(dirs)}; {hint}")

    def link(self):
        self.module = self.linker.link_module()
        self.linker = None
        return self
