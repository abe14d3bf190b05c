"""The engines: generate -> compile -> cache per context -> launch.

=======================  =========================================================================
engine                   the array engine's Python side: ``Kernel`` (one operation over fixed
                         dtypes; C++ ElementwiseCore lays each launch out and caches the kernel
                         per (layout, context)); every elementwise operation runs on it
elementwise              ElementwiseKernel and PyCUDA's flat get_elwise_* module generators
elementwise_factories    PyCUDA's get_*_kernel arithmetic factories (memoized prepared Functions)
elementwise_copies       PyCUDA's get_*_kernel copying factories (take, put, copy, ...)
reduction                ReductionKernel (two-stage PyCUDA reduction) and its per-context plans
reduction_factories      PyCUDA's one-stage reduction template factories
axis_reduction           NumPy's reductions over axes: running a plan (the launches, cached)
axis_reduction_plan      NumPy's reductions over axes: arguments, dtypes, the launch plan (pure)
scan                     Inclusive- / ExclusiveScanKernel, ArrayScan (cumsum, cumprod)
generic_scan             PyOpenCL's GenericScanKernel on the same modules and look-back state
cargs                    PyCUDA's C-argument parser (ScalarArg, VectorArg, parse_c_arg)
results                  how results are made: the registered array class, compact strides
tuning                   CUPLUG_*_TUNE environment readers (a bad value warns and is ignored)
=======================  =========================================================================

Layer rule (docs/architecture.md): these modules import the wings _compile, _codegen, _driver
and the bottom (cuplug._core, cuplug._dtypes), never cuplug._array nor a public facade. Results are
arrays of the class the array layer registered with the C++ layer
(``_core._array.result_type()``), so no engine imports GPUArray. What an engine compiles is
kept per live context in cuplug._driver.context_cache and dropped with the context.
"""
