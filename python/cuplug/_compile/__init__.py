"""Private compile-and-load machinery under cuplug.compiler (issue 25's ``_compile`` wing).

=================  ==============================================================================
compiling          compile_source(): a CUDA source through the selected compiler backend and the
                   compile cache (options, include folders, the nvcc fall-back for host headers)
source_module      SourceModule, DynamicModule, DynamicSourceModule: compiled sources loaded in
                   the current context
modules            modules loaded per (context, cache key); name-expression lookups
linking            the driver's Linker and the search for the toolkit's static libraries
arch               the GPU architecture compiled for (arch=, CUPLUG_ARCH, the device's, clamped)
errors             CompileError with the log's error lines and an excerpt of the source
nvcc               nvcc run as a tool: get_nvcc_version(), preprocess_source(), fatbins
toolkit            the CUDA toolkit search order, with NVIDIA's pip wheels of this Python
settings           DEFAULT_NVCC_FLAGS and CUDA_DEBUGGING (PyCUDA's facade globals, kept here)
=================  ==============================================================================

The modules import only downward: the C++ extension (``cuplug._core``), ``cuplug._driver`` and
bottom utilities, never a public module such as ``cuplug.compiler`` or ``cuplug.driver``. This
file imports none of them: ``import cuplug`` loads ``toolkit`` alone.
"""
