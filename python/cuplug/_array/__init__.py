"""The array layer behind cuplug.gpuarray, split by concern (CuPy's _routines_* style):

=================  ==============================================================================
core               GPUArray (ArrayBase's C layout + the mixins below), ArrayFlags
creation           empty, zeros, ones, *_like, arange
transfers          to_gpu(_async), set/get (+ async), copy, copies between devices
indexing           __getitem__/__setitem__, reshape, ravel, view, squeeze, transpose
methods            fill, astype, mul_add, conj, real, imag, reverse, round, clip
math               the dispatch resolver, apply(), minimum/maximum/where/if_positive/logical_*
manipulation       concatenate, stack, take, multi_take, multi_take_put, multi_put
vec                CUDA vector dtypes
geometry           splay, GPUArray._grid / _block (PyCUDA's launch geometry)
interop            __cuda_array_interface__, DLPack, asarray (owned by the interop work)
dlpack_types       DLPack's device and dtype codes and their NumPy dtypes (for interop)
foreign            checks of imported memory: CAI fields, known pointer, layout inside it
=================  ==============================================================================

The direction of imports: core (the class) imports its routines; no routine imports the class
back. Routines and engines make their results through the C++ layer (operations) or
``cuplug._kernels.results`` (the class registered as the ``result_type`` hook, which
core does when it is imported: importing any module of this package imports core first, below).
The engines (compile, cache per context, launch) are in cuplug._kernels.

The elementwise engine (for ElementwiseKernel, cumath and anything elementwise)
-------------------------------------------------------------------------------

``cuplug._kernels.engine.Kernel(args, operation, name, preamble="", loop_prep="",
after_loop="", options=None, raw=())`` is one operation over fixed argument dtypes, written as
PyCUDA writes it::

    from cuplug._kernels.engine import Arg, Kernel
    k = Kernel([Arg("z", np.float32, True), Arg("a", np.float32, False),
                Arg("x", np.float32, True), Arg("b", np.float32, False),
                Arg("y", np.float32, True)],
               "z[i] = a*x[i] + b*y[i]", "axpbyz")
    k(z, 2.0, x, 3.0, y, stream=None)          # launch; shape= sets the iteration space

* Vectors are GPUArrays of exactly the declared dtype (TypeError otherwise), scalars any number
  (cast as NumPy casts a Python scalar: out-of-range ints raise OverflowError).
* The iteration space is the NumPy broadcast of the vectors; vectors the operation writes must
  have that shape. Any strides work (negative too), in the kernel, without copies: the C++ side
  (``_core._array.ElementwiseCore``) collapses dimensions, picks per-vector access classes
  (contiguous / strided / broadcast / 0-d), 16-byte vector loads along the innermost dimension
  when every access is ``name[i]``, and 32-bit index arithmetic when it is safe.
* Operations that use ``i`` for more than ``name[i]`` (``z[i] = i``) keep C order, so ``i`` is the
  element's C-order linear index over the broadcast shape. Operations that index a vector other
  than as ``name[i]`` (``x[n-1-i]``) need every vector C-contiguous of the iteration shape
  (ValueError otherwise) - or pass such vectors in ``raw=("a",)``: a bare pointer outside the
  iteration space, indexed by the operation itself (``z[i] = a[idx[i]]``).
* Kernels are generated (cuplug._codegen.elementwise.generate) per layout on first use, compiled
  by cuplug.compiler.SourceModule (selected compiler backend + compile cache), loaded per
  context through the launcher backend, and cached in C++ by (layout, context).
  ``k.source(layout)`` shows the source for a ``Layout``; ``k.plan(*operands)`` the layout a
  launch would use (no device needed: arrays may wrap any int address).

NumPy-semantics elementwise operations over mixed arrays and scalars go through
``_core._array.apply(name, operands, out=None, stream=None)`` (``math.apply``): ``name`` is a
row of the one operation table ``cuplug._codegen.ops.OPS`` (add, maximum, isnan, sin, ...);
dispatch is a C++ hash lookup on (name, operand kinds and dtypes, out dtype), and on a miss
``math._resolve`` builds the Kernel with NumPy's loop dtypes. To add an operation, add a row to
``ops.TABLE`` (name, numpy ufunc, C expression per kind of loop) and call
``apply(name, (x,), out, stream)``; operators and cuplug.cumath use the same table.

Memory: ``allocator=None`` arrays take memory from the selected allocator backend, or, with
none chosen, from a caching pool of the current context's own (python/src/array/
array_memory.cpp); out of memory frees what the allocator holds, runs gc.collect(), retries,
then raises MemoryError naming the size. ``cuplug.tools.clear_context_caches()`` gives the
pools' memory back and drops compiled kernels.

Where results differ from NumPy (a kernel cannot raise): integer powers with negative exponents
in an *array* give 0 (1 and -1 for bases 1 and -1) where NumPy raises (scalar exponents do
raise ValueError); take/multi_take clip out-of-range indices (NumPy's mode="clip") and the put
forms skip them. PyCUDA's choices kept: ``+x`` is ``x``; ``real``/``imag``/``conj()`` of a
complex array are new arrays; ``get_async()`` returns page-locked memory (as PyCUDA documents).
"""

# The class first: results that routines make through cuplug._kernels.results are of the class
# core registers with the C++ layer, whichever module of the package a caller imported.
from . import core as _core_class  # noqa: E402, F401
