"""PyCUDA's module-level reduction factories (cuplug.reduction re-exports them): any / all in
both call forms, and ``get_reduction_module`` / ``get_reduction_kernel_and_types``, PyCUDA's
one-stage reduction template for code that builds its own two-stage reductions from it."""

from __future__ import annotations

import numpy as np

from cuplug._codegen.names import is_c_identifier
from cuplug._compile.source_module import SourceModule
from cuplug._kernels.cargs import VectorArg, get_arg_type
from cuplug._kernels.reduction import ReductionKernel, _cached, _ct, _tag

__all__ = [
    "get_all_kernel",
    "get_any_kernel",
    "get_reduction_kernel_and_types",
    "get_reduction_module",
]


def _truth_kernel(what, neutral, op, dtype_out, dtype_in):
    """any / all: whether elements of ``dtype_in`` are nonzero, combined with ``op``, as a
    ``dtype_out`` 0 or 1."""
    dtype_in, dtype_out = np.dtype(dtype_in), np.dtype(dtype_out)
    return _cached(
        (what, dtype_out, dtype_in),
        lambda: ReductionKernel(
            dtype_out,
            neutral,
            f"(out_t)((a != (out_t)0) {op} (b != (out_t)0))",
            "(out_t)(in[i] != (in_t)0)",
            [VectorArg(dtype_in, "in")],
            name=f"cuplug_{what}_{_tag(dtype_out, dtype_in)}",
            preamble=f"typedef {_ct(dtype_in)} in_t;\ntypedef {_ct(dtype_out)} out_t;",
        ),
    )


def _truth_dtypes(where, dtype_out, dtype_in, dtype):
    if dtype is not None:
        if dtype_in is not None or dtype_out is not None:
            raise TypeError(f"{where}: dtype= is the one-argument form; pass it alone")
        return np.bool_, dtype
    if dtype_in is None:  # cuplug's form: the one dtype is the elements', the result bool
        return np.bool_, np.bool_ if dtype_out is None else dtype_out
    return (dtype_in if dtype_out is None else dtype_out), dtype_in


def get_any_kernel(dtype_out=None, dtype_in=None, *, dtype=None):
    """A kernel: ``kernel(a)`` is whether any element of ``a`` is nonzero.

    ``get_any_kernel(dtype_out, dtype_in)`` is PyCUDA's form (the result is a ``dtype_out``
    0 or 1; ``dtype_out=None`` means ``dtype_in``); ``get_any_kernel(dtype)`` /
    ``get_any_kernel(dtype=...)`` takes the elements' dtype and gives a bool.

    Parameters
    ----------
    dtype_out : numpy.typing.DTypeLike | None
        The result's dtype (PyCUDA's form), or the elements' when given alone.
    dtype_in : numpy.typing.DTypeLike | None
        The elements' dtype (PyCUDA's form).
    dtype : numpy.typing.DTypeLike | None
        The elements' dtype (the one-argument form by keyword).

    Returns
    -------
    ReductionKernel
        The kernel, cached per dtypes (built once per process).
    """
    out, in_ = _truth_dtypes("get_any_kernel", dtype_out, dtype_in, dtype)
    return _truth_kernel("any", "0", "||", out, in_)


def get_all_kernel(dtype_out=None, dtype_in=None, *, dtype=None):
    """A kernel: ``kernel(a)`` is whether every element of ``a`` is nonzero.

    ``get_all_kernel(dtype_out, dtype_in)`` is PyCUDA's form (the result is a ``dtype_out``
    0 or 1; ``dtype_out=None`` means ``dtype_in``); ``get_all_kernel(dtype)`` /
    ``get_all_kernel(dtype=...)`` takes the elements' dtype and gives a bool.

    Parameters
    ----------
    dtype_out : numpy.typing.DTypeLike | None
        The result's dtype (PyCUDA's form), or the elements' when given alone.
    dtype_in : numpy.typing.DTypeLike | None
        The elements' dtype (PyCUDA's form).
    dtype : numpy.typing.DTypeLike | None
        The elements' dtype (the one-argument form by keyword).

    Returns
    -------
    ReductionKernel
        The kernel, cached per dtypes (built once per process).
    """
    out, in_ = _truth_dtypes("get_all_kernel", dtype_out, dtype_in, dtype)
    return _truth_kernel("all", "1", "&&", out, in_)


# PyCUDA's template, with one change: the last warp reduces under __syncwarp() with only the
# lanes that own a result writing (PyCUDA's volatile lock-step form races under Volta's
# independent thread scheduling, and does not compile for struct out_types).
_MODULE_TEMPLATE = """
#include <pycuda-complex.hpp>

#define BLOCK_SIZE %(block_size)d
#define READ_AND_MAP(i) (%(map_expr)s)
#define REDUCE(a, b) (%(reduce_expr)s)

%(preamble)s

typedef %(out_type)s out_type;

extern "C"
__global__
void %(name)s(out_type *out, %(arguments)s,
  unsigned int seq_count, size_t n)
{
  extern __shared__ out_type sdata[];

  unsigned int tid = threadIdx.x;

  size_t i = blockIdx.x*BLOCK_SIZE*seq_count + tid;

  out_type acc = %(neutral)s;
  for (unsigned s = 0; s < seq_count; ++s)
  {
    if (i >= n)
      break;
    acc = REDUCE(acc, READ_AND_MAP(i));

    i += BLOCK_SIZE;
  }

  sdata[tid] = acc;

  __syncthreads();

  #if (BLOCK_SIZE >= 512)
    if (tid < 256) { sdata[tid] = REDUCE(sdata[tid], sdata[tid + 256]); }
    __syncthreads();
  #endif

  #if (BLOCK_SIZE >= 256)
    if (tid < 128) { sdata[tid] = REDUCE(sdata[tid], sdata[tid + 128]); }
    __syncthreads();
  #endif

  #if (BLOCK_SIZE >= 128)
    if (tid < 64) { sdata[tid] = REDUCE(sdata[tid], sdata[tid + 64]); }
    __syncthreads();
  #endif

  if (tid < 32)
  {
    for (unsigned int offset = 32; offset >= 1; offset /= 2)
    {
      if (BLOCK_SIZE >= 2 * offset && tid < offset)
        sdata[tid] = REDUCE(sdata[tid], sdata[tid + offset]);
      __syncwarp();
    }
  }

  if (tid == 0) out[blockIdx.x] = sdata[0];
}
"""


def get_reduction_module(
    out_type,
    block_size,
    neutral,
    reduce_expr,
    map_expr,
    arguments,
    name="reduce_kernel",
    keep=False,
    options=None,
    preamble="",
):
    """PyCUDA's one-stage reduction: a SourceModule whose kernel ``name(out_type *out,
    <arguments>, unsigned int seq_count, size_t n)`` reduces ``seq_count`` runs of
    ``block_size`` mapped elements per block into ``out[blockIdx.x]``. Launch it with
    ``block_size`` threads and ``block_size * sizeof(out_type)`` bytes of shared memory.

    Parameters
    ----------
    out_type : str
        The C type of the result.
    block_size : int
        Threads per block: a power of two from 2 to 512 (PyCUDA uses 512).
    neutral : str
        The reduction's neutral element, as C.
    reduce_expr : str
        C expression of ``a`` and ``b``.
    map_expr : str
        C expression of ``i`` read from the arguments.
    arguments : str
        The C argument list.
    name : str
        The kernel's name.
    keep : bool
        Keep the compiler's files.
    options : list[str] | None
        Compiler options.
    preamble : str
        Source before the kernel (after the macros, before ``out_type``).

    Returns
    -------
    SourceModule
        The compiled module.
    """
    block_size = int(block_size)
    if block_size < 2 or block_size > 512 or block_size & (block_size - 1):
        raise ValueError(
            f"get_reduction_module: block_size must be a power of two from 2 to 512, got "
            f"{block_size}"
        )
    if not is_c_identifier(name):
        raise ValueError(f"get_reduction_module: kernel name {name!r} is not a C identifier")
    src = _MODULE_TEMPLATE % {
        "out_type": out_type,
        "arguments": arguments,
        "block_size": block_size,
        "neutral": neutral,
        "reduce_expr": reduce_expr,
        "map_expr": map_expr,
        "name": name,
        "preamble": preamble,
    }
    return SourceModule(src, options=options, keep=keep, no_extern_c=True)


def get_reduction_kernel_and_types(
    stage,
    out_type,
    block_size,
    neutral,
    reduce_expr,
    map_expr=None,
    arguments=None,
    name="reduce_kernel",
    keep=False,
    options=None,
    preamble="",
):
    """PyCUDA's stage kernels: stage 1 maps and reduces the arguments (``map_expr`` defaults
    to ``in[i]``); stage 2 reduces stage 1's partial results, passed first as
    ``const out_type *pycuda_reduction_inp``.

    Parameters
    ----------
    stage : int
        1 or 2.
    out_type : str
        The C type of the result.
    block_size : int
        Threads per block (a power of two, at most 512).
    neutral : str
        The neutral element, as C.
    reduce_expr : str
        C expression of ``a`` and ``b``.
    map_expr : str | None
        C expression of ``i`` (see above for the default).
    arguments : str | None
        The C argument list (stage 2: the arguments that follow the partial results).
    name : str
        The kernel's name.
    keep : bool
        Keep the compiler's files.
    options : list[str] | None
        Compiler options.
    preamble : str
        Source before the kernel.

    Returns
    -------
    tuple[Function, list[str]]
        The function, prepared as ``"P" + arg_types + "IN"`` (out, arguments, seq_count, n),
        and the arguments' struct format characters.
    """
    if stage == 1:
        if map_expr is None:
            map_expr = "in[i]"
        if not arguments:
            raise ValueError("get_reduction_kernel_and_types: stage 1 needs arguments")
    elif stage == 2:
        if map_expr is None:
            map_expr = "pycuda_reduction_inp[i]"
        in_arg = f"const {out_type} *pycuda_reduction_inp"
        arguments = in_arg + ", " + arguments if arguments else in_arg
    else:
        raise ValueError(f"get_reduction_kernel_and_types: stage must be 1 or 2, got {stage!r}")
    mod = get_reduction_module(
        out_type,
        block_size,
        neutral,
        reduce_expr,
        map_expr,
        arguments,
        name,
        keep,
        options,
        preamble,
    )
    func = mod.get_function(name)
    arg_types = [get_arg_type(arg) for arg in arguments.split(",")]
    func.prepare("P{}IN".format("".join(arg_types)))
    return func, arg_types
