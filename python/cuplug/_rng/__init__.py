"""The random-number machinery under cuplug.random and cuplug.curandom (issue 25's ``_rng`` wing),
split by concern:

==================  =============================================================================
stream              the counter-based stream (seed, offset) over an rng backend, filling GPUArrays
                    from it; its generators are kept per context (cuplug._driver.context_cache)
curand_info         cuRAND's version and direction-vector sets (cuplug.driver exports them too)
sobol               cuRAND's Sobol direction vectors and scramble constants, one default copy per
                    context; the four Sobol device-API generators
device_kernels      the CUDA source of the device-API generators' kernels (CI compiles it)
device_generators   the device-API generators' base class (compile, prepare, fill, skip) and the
                    pseudo-random ones: XORWOW, MRG32k3a
philox              PhiloxRandomNumberGenerator, PyCUDA's generator interface over the stream
integers            the kernel mapping raw words to integers in a range (random.Generator.integers)
==================  =============================================================================

Imports only downward (the extension, cuplug._driver, cuplug._array's GPUArray, the kernel and
compile layers), never a public module. This file imports nothing, so that cuplug.driver's import
of curand_info does not load the rest.
"""
