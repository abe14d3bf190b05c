"""Source generation for reductions: PyCUDA's ``ReductionKernel(dtype_out, neutral, reduce_expr,
map_expr, arguments)`` as two kernels of one module. Pure functions of their arguments (no device,
no compiler), so CI checks what they produce by compiling it with NVRTC.

``<name>_stage1(acc_type *cuplug_out, <arguments>, unsigned long long cuplug_chunk,
unsigned long long n)``: block ``b`` reduces the elements ``[b*chunk, min((b+1)*chunk, n))``,
each thread the ones ``i = start + threadIdx.x + k*BLOCK`` in order (``map_expr`` gives the value
of element ``i``), then the block combines its threads' values in a fixed tree, lower indices on
the left of ``reduce_expr``; thread 0 writes the block's value to ``cuplug_out[b]`` (as
``out_type`` when ``final``: a one-block launch writes the result itself).

``<name>_stage2(out_type *cuplug_out, const acc_type *cuplug_in, unsigned long long n)``: one
block reduces the ``n`` partial values of stage 1 the same way and writes ``cuplug_out[0]``.

The split of the work depends only on ``n`` and the block count (the caller's choice from the
device), never on timing, so a float result has the same bits on every run. ``acc_type`` may be
wider than ``out_type`` (cuplug's own float sums accumulate in double): the partial values keep
it, and the result is converted once at the end.

Block size 256; the tree runs in shared memory with ``__syncthreads`` and, inside the last warp,
``__syncwarp`` (any type: structs and complex too; no shuffles, which take only 4/8-byte types).
CUB's BlockReduce would do the same work, but including it costs NVRTC 1.5 s per new kernel
against 50 ms for this (measured on the build machine, see docs/dependencies.md).
"""

from __future__ import annotations

import numpy as np

from cuplug import _dtypes

from .elementwise import Arg

__all__ = ["BLOCK", "Arg", "generate", "split"]

#: Threads per block of both stages.
BLOCK = 256

#: Elements a thread maps before combining them (their loads in flight together).
UNROLL = 4

_TREE = """\
__device__ __forceinline__ acc_type cuplug_block_reduce(acc_type v)
{{
  // Raw storage: __shared__ variables may not have constructors (complex has one).
  __shared__ alignas(acc_type) unsigned char cuplug_smem[{block} * sizeof(acc_type)];
  acc_type *sm = reinterpret_cast<acc_type *>(cuplug_smem);
  const unsigned t = threadIdx.x;
  sm[t] = v;
  __syncthreads();
#pragma unroll
  for (unsigned s = {block} / 2; s >= 32; s >>= 1) {{
    if (t < s)
      sm[t] = cuplug_reduce(sm[t], sm[t + s]);
    __syncthreads();
  }}
  if (t < 32) {{
#pragma unroll
    for (unsigned s = 16; s > 0; s >>= 1) {{
      acc_type other = sm[t + s];
      __syncwarp();
      if (t < s)
        sm[t] = cuplug_reduce(sm[t], other);
      __syncwarp();
    }}
  }}
  return sm[0];
}}
"""


def _param(a):
    ct = _dtypes.ctype(a.dtype)
    return f"{ct} *{a.name}" if a.vector else f"{ct} {a.name}"


def _loop(map_expr, first, stop):
    """The loop of one thread over elements ``first, first + BLOCK, ... < stop``, combined into
    ``cuplug_acc`` in that order. Whole groups of ``UNROLL`` elements are mapped first and combined
    after, so their loads are all in flight at once (a plain ``#pragma unroll`` loop keeps a
    branch, and so a wait, after each element: measured in the SASS of sm_90); the rest, one at a
    time. The order of the combination, and so every bit of a float result, is the same."""
    values = ", ".join(
        f"cuplug_v{k} = cuplug_map(cuplug_i{f' + {k * BLOCK}' if k else ''})" for k in range(UNROLL)
    )
    combine = "\n".join(
        f"    cuplug_acc = cuplug_reduce(cuplug_acc, cuplug_v{k});" for k in range(UNROLL)
    )
    return f"""\
  const auto cuplug_map = [&](const unsigned long long i) {{ return (acc_type)({map_expr}); }};
  unsigned long long cuplug_i = {first};
  for (; cuplug_i + {(UNROLL - 1) * BLOCK} < {stop}; cuplug_i += {UNROLL * BLOCK}) {{
    const acc_type {values};
{combine}
  }}
  for (; cuplug_i < {stop}; cuplug_i += {BLOCK})
    cuplug_acc = cuplug_reduce(cuplug_acc, cuplug_map(cuplug_i));"""


def generate(
    arguments,
    out_dtype,
    neutral,
    reduce_expr,
    map_expr,
    name="reduce_kernel",
    preamble="",
    acc_dtype=None,
):
    """The module source (str) of a reduction: kernels ``<name>_stage1`` and ``<name>_stage2``.

    ``arguments``: :class:`Arg` list (vectors and scalars, in parameter order). ``neutral``: C
    expression of the identity (``"0"``). ``reduce_expr``: C expression of ``a`` and ``b``.
    ``map_expr``: C expression of element ``i`` (``"x[i]*y[i]"``). ``acc_dtype``: the type
    values are combined in (default ``out_dtype``)."""
    out_dtype = np.dtype(out_dtype)
    acc_dtype = out_dtype if acc_dtype is None else np.dtype(acc_dtype)
    dtypes = [a.dtype for a in arguments] + [out_dtype, acc_dtype]
    head = list(_dtypes.headers_for(dtypes))
    out_ct, acc_ct = _dtypes.ctype(out_dtype), _dtypes.ctype(acc_dtype)
    params = ", ".join(_param(a) for a in arguments)
    sep = ", " if params else ""
    source = "\n".join(head) + ("\n" if head else "")
    # The preamble first, as PyCUDA's: it may define the struct of a registered record dtype
    # that out_type names (PyCUDA's test_struct_reduce).
    if preamble:
        source += preamble + "\n"
    source += f"typedef {out_ct} out_type;\ntypedef {acc_ct} acc_type;\n"
    source += (
        "__device__ __forceinline__ acc_type cuplug_reduce(const acc_type a, const acc_type b)\n"
        f"{{\n  return ({reduce_expr});\n}}\n"
    )
    source += _TREE.format(block=BLOCK)
    source += f"""\
extern "C" __global__ void __launch_bounds__({BLOCK}) {name}_stage1(
    acc_type *cuplug_out{sep}{params}, const unsigned long long cuplug_chunk,
    const unsigned long long n)
{{
  const unsigned long long cuplug_start = (unsigned long long)blockIdx.x * cuplug_chunk;
  const unsigned long long cuplug_stop =
      cuplug_chunk < n - cuplug_start ? cuplug_start + cuplug_chunk : n;
  acc_type cuplug_acc = ({neutral});
{_loop(map_expr, "cuplug_start + threadIdx.x", "cuplug_stop")}
  cuplug_acc = cuplug_block_reduce(cuplug_acc);
  if (threadIdx.x == 0)
    cuplug_out[blockIdx.x] = cuplug_acc;
}}

extern "C" __global__ void __launch_bounds__({BLOCK}) {name}_final(
    out_type *cuplug_out{sep}{params}, const unsigned long long n)
{{
  acc_type cuplug_acc = ({neutral});
{_loop(map_expr, "threadIdx.x", "n")}
  cuplug_acc = cuplug_block_reduce(cuplug_acc);
  if (threadIdx.x == 0)
    cuplug_out[0] = (out_type)cuplug_acc;
}}

extern "C" __global__ void __launch_bounds__({BLOCK}) {name}_stage2(
    out_type *cuplug_out, const acc_type *cuplug_in, const unsigned long long n)
{{
  acc_type cuplug_acc = ({neutral});
  for (unsigned long long i = threadIdx.x; i < n; i += {BLOCK})
    cuplug_acc = cuplug_reduce(cuplug_acc, cuplug_in[i]);
  cuplug_acc = cuplug_block_reduce(cuplug_acc);
  if (threadIdx.x == 0)
    cuplug_out[0] = (out_type)cuplug_acc;
}}
"""
    return source


def split(n, max_blocks):
    """(blocks, chunk) of stage 1 for ``n`` elements: at most ``max_blocks`` blocks of whole
    multiples of BLOCK elements each (at least 4 per thread, so short inputs use few blocks).
    A function of n and max_blocks only: the same input reduces in the same order every time."""
    per_block_min = BLOCK * 4
    blocks = max(1, min(max_blocks, -(-n // per_block_min)))
    chunk = -(-n // blocks)
    chunk = -(-chunk // BLOCK) * BLOCK
    blocks = max(1, -(-n // chunk)) if n else 1
    return blocks, chunk
