"""Source generation for scans (prefix sums): PyCUDA's Inclusive/ExclusiveScanKernel, PyOpenCL's
GenericScanKernel and NumPy's cumsum/cumprod. Pure functions of their arguments (no device, no
compiler), so CI checks what they produce by compiling it with NVRTC.

One single-pass kernel reads every element once and writes every result once (2N bytes moved,
the least a scan can move; a reduce-then-scan moves 3N). Its results are deterministic: the same
input gives the same bits on every run, whatever the timing of the blocks.

Tiles. The input is cut into tiles of ``block * items`` elements. A block takes the next tile ID
from an atomic counter (so a tile's predecessors are running or done: no deadlock), loads it with
coalesced 16-byte loads (lane ``l`` of a warp holds ``vec`` contiguous elements of each of its
``items / vec`` chunks; a warp's chunk is ``32 * vec`` contiguous elements), and scans it: within
a lane serially, across the lanes of a chunk with shuffles, across chunks and warps in order.
Each value is a fixed expression of the tile's elements, the same bracketing every run.

Across tiles (the deterministic decoupled look-back). Tiles form groups of GROUP (32). Each tile
publishes its aggregate ``A(t)``. The exclusive prefix of tile ``t = 32 g + p`` is
``GP(g-1) (+) C(p)``, where ``C(p)`` is a fixed shuffle tree over ``A(32 g) .. A(t-1)`` (read by
the tile's first warp, one per lane) and ``GP`` is the left fold ``GP(g) = GP(g-1) (+) T(g)``,
``GP(0) = T(0)``, of the group totals ``T(g) = C(32)`` (published by each group's last tile). A
tile that finds ``GP(g-1)`` unpublished walks back over the groups until one with a published
``GP(j)`` and folds ``T(j+1) .. T(g-1)`` onto it: the same operations on the same values as the
chain itself, so the same bits, whoever computes it first (it publishes what it computed, which
only ever repeats the value). Kernels compile with ``--fmad=false`` so that a multiply-add in an
operator is rounded the same way at every place it is inlined.

The publication protocol is the usual one: the value is stored through L2 (``st.global.cg``),
then a status word with ``st.release.gpu``; readers spin on ``ld.acquire.gpu`` (with a short
``__nanosleep`` backoff) and then read the value through L2. A value of at most 4 bytes travels
in the status word itself (one 64-bit release store), which saves a round trip per look-back.

Small inputs (``tiles <= single_tiles``) run in one block that walks the tiles in order with a
running carry: no scratch memory, one launch.

Scratch memory of a multi-block launch (:func:`scratch_bytes`): a 16-byte tile counter, then one
8-byte status word per channel entry (tile aggregates, group totals, group prefixes), then the
value slots; the counter and the status words must be zero before the launch
(:func:`scratch_zero_bytes`), which a memset does.

The device code all of them share (tile loads, the look-back, the kernel skeleton) is
scan_device.py's; this module fills it in. Two kinds of module come out of here:

- :func:`generate_array_scan`: ``out[i] = scan(in)[i]`` over arrays with element steps (strided
  and negative steps in the kernel; 16-byte vector loads and stores when both steps are 1 and the
  pointers aligned), input dtype, accumulator dtype and output dtype separate (cumsum of int8
  into int64, float16 accumulated in float32), inclusive or exclusive, optionally segmented into
  rows of a length given at launch (cumsum along the last axis of an n-d array).
- :func:`generate_generic_scan`: PyOpenCL's GenericScanKernel: ``input_expr`` of ``i``,
  ``scan_expr`` of ``a``, ``b`` and ``across_seg_boundary``, ``is_segment_start_expr``,
  ``input_fetch_exprs``, then ``output_statement`` with ``item``, ``prev_item``, ``last_item``,
  ``i`` and ``N``. The scan writes ``item`` (and the segment-start flags when ``prev_item`` is
  used) to a temporary; a second kernel runs the output statement. So every input is read
  before any output is written, as in PyOpenCL (``ary[i+1] = item`` in place works).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from cuplug import _dtypes

from .elementwise import Arg
from .scan_device import GROUP, STORE_PIECE, TILE_KERNEL, indent, primitives, value_code

__all__ = [
    "GROUP",
    "Arg",
    "ArrayScan",
    "GenericScan",
    "Tuning",
    "generate_array_scan",
    "generate_generic_scan",
    "scratch_bytes",
    "scratch_zero_bytes",
    "tuning_for",
    "value_words",
]

#: Options every scan module is compiled with (see the module docstring).
OPTIONS = ["--fmad=false"]


@dataclass(frozen=True)
class Tuning:
    """Launch shape of a scan kernel: ``block`` threads, ``items`` elements per thread, in
    chunks of ``vec`` contiguous elements per lane; inputs of at most ``single_tiles`` tiles
    run in one block."""

    block: int = 128
    items: int = 24
    vec: int = 4
    single_tiles: int = 4
    min_sleep: int = 32  # ns of the look-back's first back-off, doubled up to max_sleep
    max_sleep: int = 512
    blockidx: int = 0  # 1: tile = blockIdx.x (CUB's order) instead of the atomic counter

    def __post_init__(self):
        if self.block % 32 or not 32 <= self.block <= 1024:
            raise ValueError(f"scan tuning: block must be a multiple of 32 up to 1024: {self}")
        if self.vec < 1 or self.items % self.vec:
            raise ValueError(f"scan tuning: items must be a multiple of vec: {self}")
        if self.vec & (self.vec - 1):
            raise ValueError(f"scan tuning: vec must be a power of two: {self}")

    @property
    def tile(self):
        return self.block * self.items


def _pow2_at_most(x):
    p = 1
    while p * 2 <= x:
        p *= 2
    return p


def tuning_for(acc_size, io_size=None, overrides=None):
    """The tuning for values of ``acc_size`` bytes (the accumulator, with the segment flag)
    loaded and stored as elements of at most ``io_size`` bytes (None: one element per lane and
    chunk, for expression inputs). ``overrides``: a dict of Tuning fields (CUPLUG_SCAN_TUNE)."""
    # Measured on an H100 (1 GiB cumsum; docs/benchmarks.md): the look-back's latency per tile
    # bounds a single-pass scan, so big tiles win: float32 went from 996 GB/s (128 threads x 24,
    # CUB's shape) to 2363 GB/s (1024 x 32; CUB 2477), float64 from 1059 to 2188 (512 x 24).
    block = 512
    if acc_size <= 4:
        block, items = 1024, 32
    elif acc_size <= 8:
        items = 24
    elif acc_size <= 16:
        items = 8
    else:
        block, items = 256, max(1, 64 // acc_size)
    overrides = dict(overrides or {})
    items = overrides.pop("items", items)
    if io_size is None:
        vec = 1
    else:
        # 16-byte loads of the wider of input and output, a power of two dividing items.
        vec = _pow2_at_most(max(1, min(16 // io_size, items)))
        while items % vec:
            vec //= 2
    vec = overrides.pop("vec", vec)
    overrides.setdefault("block", block)
    return Tuning(items=items, vec=vec, **overrides)


def value_words(itemsize, segmented):
    """32-bit words per look-back slot for a scan type of ``itemsize`` bytes: room for the
    value (and the segment flag, padded as a struct of any alignment up to 16 would be)."""
    size = itemsize
    if segmented:
        size = -(-(itemsize + 1) // 16) * 16 if itemsize >= 8 else 2 * max(itemsize, 4)
    return -(-size // 4)


def _groups(tiles):
    return -(-tiles // GROUP)


def scratch_zero_bytes(tiles):
    """Bytes at the start of the scratch memory that must be zero before a launch."""
    return 16 + 8 * (tiles + 2 * _groups(tiles))


def scratch_bytes(tiles, words):
    """Bytes of scratch memory a multi-block launch over ``tiles`` tiles needs."""
    entries = tiles + 2 * _groups(tiles)
    return 16 + 8 * entries + 4 * words * entries


def _ctype(dtype):
    return _dtypes.ctype(dtype)


def _is_pow2(x):
    return x > 0 and not x & (x - 1)


@dataclass(frozen=True)
class ArrayScan:
    """A generated array scan: ``source`` with the kernel ``name``, its tuning, the look-back
    slot size in words, and whether it has the vector path (16-byte loads, stores of
    ``piece`` elements)."""

    source: str
    name: str
    tuning: Tuning
    words: int
    vector: bool
    piece: int  # output elements per vector store
    segmented: bool

    def arg_format(self):
        """The prepared-call format: in, in_step, out, out_step, [row,] vec_ok, n, state."""
        return "PqPq" + ("Q" if self.segmented else "") + "iQP"


def generate_array_scan(
    name,
    in_dtype,
    scan_dtype,
    out_dtype,
    scan_expr,
    neutral=None,
    exclusive=False,
    segmented=False,
    preamble="",
    tuning=None,
):
    """An array scan kernel ``name(const in_type *in, long long in_step, out_type *out,
    long long out_step, [unsigned long long row,] int vec_ok, unsigned long long n,
    unsigned char *state)``: ``out[k*out_step] = (out_type) scan[k]`` for ``k < n`` where
    ``scan`` is the inclusive (``exclusive``: exclusive, starting at ``neutral``) scan of
    ``(scan_type) in[k*in_step]`` under ``scan_expr`` (a C expression of ``a``, the earlier
    value, and ``b``). ``segmented``: the scan restarts at every multiple of ``row`` (a
    launch argument; ``scan_expr`` sees ``across_seg_boundary``). ``vec_ok``: both steps are 1
    and both pointers aligned for the vector path (the caller checks). ``tuning``: a
    :class:`Tuning` (default: :func:`tuning_for` the sizes)."""
    in_dtype, scan_dtype, out_dtype = map(np.dtype, (in_dtype, scan_dtype, out_dtype))
    if exclusive and neutral is None:
        raise ValueError("an exclusive scan needs a neutral element")
    if exclusive and segmented:
        raise ValueError("segmented exclusive array scans are not generated")
    in_size, out_size = in_dtype.itemsize, out_dtype.itemsize
    words = value_words(scan_dtype.itemsize, segmented)
    t = tuning or tuning_for(4 * words, max(in_size, out_size))
    vector = (
        _is_pow2(in_size)
        and _is_pow2(out_size)
        and t.vec * in_size <= 16
        and t.vec > 1
        and in_size <= 16
        and out_size <= 16
    )
    piece = min(t.vec, max(1, 16 // out_size))  # output elements per vector store
    head = list(_dtypes.headers_for([in_dtype, scan_dtype, out_dtype]))
    src = "\n".join(head) + ("\n" if head else "")
    if preamble:
        src += preamble + "\n"
    src += (
        f"typedef {_ctype(scan_dtype)} scan_type;\ntypedef {_ctype(in_dtype)} in_type;\n"
        f"typedef {_ctype(out_dtype)} out_type;\n"
    )
    src += value_code(_ctype(scan_dtype), scan_expr, neutral, segmented)
    src += primitives(t, words)
    if vector:
        src += (
            "struct alignas(CUPLUG_V * sizeof(in_type)) cuplug_in_vec\n{\n"
            "  in_type v[CUPLUG_V];\n};\n"
            f"struct alignas({piece} * sizeof(out_type)) cuplug_out_vec\n{{\n"
            f"  out_type v[{piece}];\n}};\n" + STORE_PIECE
        )
    params = (
        "const in_type *cuplug_in, const long long cuplug_in_step, out_type *cuplug_out,\n"
        "    const long long cuplug_out_step, "
        + ("const unsigned long long cuplug_row, " if segmented else "")
        + "const int cuplug_vec_ok, "
    )
    convert = "(scan_type)" if in_dtype != scan_dtype else ""

    def assign(c, j, value):
        if segmented:
            return (
                f"cuplug_v[{c}][{j}].v = {convert}({value});\n"
                f"cuplug_v[{c}][{j}].s = cuplug_r == 0;\n"
                "if (++cuplug_r == cuplug_row)\n  cuplug_r = 0;\n"
            )
        return f"cuplug_v[{c}][{j}] = {convert}({value});\n"

    load = "#pragma unroll\nfor (int c = 0; c < CUPLUG_C; ++c) {\n"
    load += "  const unsigned long long e0 = cuplug_lane_base + c * 32 * CUPLUG_V;\n"
    if segmented:
        load += "  unsigned long long cuplug_r = e0 % cuplug_row;\n"
    body_vec = (
        "const cuplug_in_vec x = *reinterpret_cast<const cuplug_in_vec *>(cuplug_in + e0);\n"
        "#pragma unroll\nfor (int j = 0; j < CUPLUG_V; ++j) {\n"
        + indent(assign("c", "j", "x.v[j]"), 2)
        + "\n}\n"
    )
    body_scalar = (
        "#pragma unroll\nfor (int j = 0; j < CUPLUG_V; ++j) {\n"
        "  const unsigned long long e = e0 + j < cuplug_n ? e0 + j : cuplug_n - 1;\n"
        + indent(assign("c", "j", "cuplug_in[(long long)e * cuplug_in_step]"), 2)
        + "\n}\n"
    )
    if vector:
        load += (
            "  if (cuplug_vec_ok && cuplug_full) {\n"
            + indent(body_vec, 4)
            + "\n  } else {\n"
            + indent(body_scalar, 4)
            + "\n  }\n"
        )
    else:
        load += indent(body_scalar, 2) + "\n"
    load += "}\n"

    result = "prev" if exclusive else "item[j]"
    store = "const unsigned long long e0 = cuplug_lane_base + c * 32 * CUPLUG_V;\n"
    if exclusive:
        store += (
            "cuplug_val out_v[CUPLUG_V];\n"
            "#pragma unroll\nfor (int j = 0; j < CUPLUG_V; ++j)\n"
            "  out_v[j] = j > 0 ? item[j - 1] : (has_x ? x : cuplug_val(cuplug_neutral()));\n"
        )
        result = "out_v[j]"
    out_value = f"(out_type)(CUPLUG_VALUE({result}))"
    scalar_store = (
        "#pragma unroll\nfor (int j = 0; j < CUPLUG_V; ++j)\n"
        "  if (e0 + j < cuplug_n)\n"
        f"    cuplug_out[(long long)(e0 + j) * cuplug_out_step] = {out_value};\n"
    )
    if vector:
        store += (
            "if (cuplug_vec_ok && cuplug_full) {\n"
            f"#pragma unroll\n  for (int q = 0; q < CUPLUG_V; q += {piece}) {{\n"
            "    cuplug_out_vec o;\n"
            f"#pragma unroll\n    for (int k = 0; k < {piece}; ++k) {{\n"
            "      const int j = q + k;\n"
            f"      o.v[k] = {out_value};\n"
            "    }\n"
            "    cuplug_store_piece(reinterpret_cast<cuplug_out_vec *>(cuplug_out + e0 + q), o);\n"
            "  }\n"
            "} else {\n" + indent(scalar_store, 2) + "\n}\n"
        )
    else:
        store += scalar_store
    src += TILE_KERNEL.format(
        name=name,
        params=params,
        prologue="",
        flags_decl="",
        load=indent(load, 4),
        store=indent(store, 6),
    )
    return ArrayScan(src, name, t, words, vector, piece, segmented)


@dataclass(frozen=True)
class GenericScan:
    """A generated GenericScanKernel module: ``<name>_scan`` writes ``item`` of every element to
    the temporary (and segment-start flags when ``flags``); ``<name>_output`` runs the output
    statement."""

    source: str
    name: str
    tuning: Tuning
    words: int
    flags: bool  # the scan stores segment-start flags (prev_item in a segmented scan)
    uses_last_item: bool


def _uses(name, code):
    return re.search(rf"\b{name}\b", code) is not None


def _param(a):
    ct = _dtypes.ctype(a.dtype)
    return f"{ct} *{a.name}" if a.vector else f"{ct} {a.name}"


def generate_generic_scan(
    name,
    arguments,
    scan_dtype,
    input_expr,
    scan_expr,
    neutral,
    output_statement,
    is_segment_start_expr=None,
    input_fetch_exprs=(),
    index_dtype=np.int64,
    preamble="",
    tuning=None,
):
    """PyOpenCL's GenericScanKernel as two kernels (see the module docstring):

    ``<name>_scan(<arguments>, scan_type *tmp, unsigned char *flags, unsigned long long n,
    unsigned char *state)`` and ``<name>_output(<arguments>, const scan_type *tmp,
    const unsigned char *flags, unsigned long long n)``.

    ``arguments``: :class:`Arg` list. ``input_fetch_exprs``: (name, argument name, offset 0 or
    -1) triples: ``name`` is ``argument[i + offset]`` in ``input_expr`` and
    ``is_segment_start_expr`` (``argument[0]`` where ``i + offset`` is -1)."""
    scan_dtype, index_dtype = np.dtype(scan_dtype), np.dtype(index_dtype)
    segmented = is_segment_start_expr is not None
    flags = segmented and _uses("prev_item", output_statement)
    uses_prev = _uses("prev_item", output_statement)
    uses_last = _uses("last_item", output_statement)
    words = value_words(scan_dtype.itemsize, segmented)
    t = tuning or tuning_for(4 * words, None)
    by_name = {a.name: a for a in arguments}
    fetch = ""
    for var, arg_name, offset in input_fetch_exprs:
        a = by_name[arg_name]
        index = "i" if offset == 0 else f"(i + ({offset}) >= 0 ? i + ({offset}) : 0)"
        fetch += f"const {_dtypes.ctype(a.dtype)} {var} = {arg_name}[{index}];\n(void){var};\n"
    head = list(_dtypes.headers_for([scan_dtype] + [a.dtype for a in arguments]))
    src = "\n".join(head) + ("\n" if head else "")
    if preamble:
        src += preamble + "\n"
    src += f"typedef {_ctype(scan_dtype)} scan_type;\ntypedef {_ctype(index_dtype)} index_type;\n"
    src += value_code(_ctype(scan_dtype), scan_expr, neutral, segmented)
    src += primitives(t, words)
    user_params = "".join(_param(a) + ", " for a in arguments)
    params = user_params + "scan_type *cuplug_tmp, unsigned char *cuplug_flags,\n    "
    if segmented:
        value = f"cuplug_v[c][j].v = a;\ncuplug_v[c][j].s = ({is_segment_start_expr});\n" + (
            "cuplug_sf[c][j] = cuplug_v[c][j].s;\n" if flags else ""
        )
        pad = "cuplug_v[c][j].v = cuplug_neutral();\ncuplug_v[c][j].s = false;\n"
    else:
        value = "cuplug_v[c][j] = a;\n"
        pad = "cuplug_v[c][j] = cuplug_neutral();\n"
    load = (
        "#pragma unroll\nfor (int c = 0; c < CUPLUG_C; ++c) {\n"
        "#pragma unroll\n  for (int j = 0; j < CUPLUG_V; ++j) {\n"
        "    const unsigned long long e = cuplug_lane_base + c * 32 * CUPLUG_V + j;\n"
        "    if (e < cuplug_n) {\n"
        "      const index_type i = (index_type)e;\n"
        + indent(fetch, 6)
        + f"\n      const scan_type a = ({input_expr});\n"
        + indent(value, 6)
        + "\n    } else {\n"
        + indent(pad, 6)
        + "\n    }\n  }\n}\n"
    )
    store = (
        "#pragma unroll\nfor (int j = 0; j < CUPLUG_V; ++j) {\n"
        "  const unsigned long long e = cuplug_lane_base + c * 32 * CUPLUG_V + j;\n"
        "  if (e < cuplug_n) {\n"
        "    cuplug_tmp[e] = CUPLUG_VALUE(item[j]);\n"
        + ("    cuplug_flags[e] = cuplug_sf[c][j];\n" if flags else "")
        + "  }\n}\n"
    )
    src += TILE_KERNEL.format(
        name=f"{name}_scan",
        params=params,
        prologue="  const index_type N = (index_type)cuplug_n;\n  (void)N;",
        flags_decl="    bool cuplug_sf[CUPLUG_C][CUPLUG_V];" if flags else "",
        load=indent(load, 4),
        store=indent(store, 6),
    )
    prev = ""
    if uses_prev:
        start = "cuplug_e == 0" + (" || cuplug_flags[cuplug_e]" if flags else "")
        prev = (
            f"    scan_type prev_item = ({start}) ? cuplug_neutral() : cuplug_tmp[cuplug_e - 1];\n"
        )
    last = "  scan_type last_item = cuplug_tmp[cuplug_n - 1];\n" if uses_last else ""
    item = "    scan_type item = cuplug_tmp[cuplug_e];\n" if _uses("item", output_statement) else ""
    src += f"""
extern "C" __global__ void __launch_bounds__(256) {name}_output(
    {user_params}const scan_type *cuplug_tmp, const unsigned char *cuplug_flags,
    const unsigned long long cuplug_n)
{{
  const index_type N = (index_type)cuplug_n;
  (void)N;
  (void)cuplug_flags;
{last}  for (unsigned long long cuplug_e = blockIdx.x * 256ull + threadIdx.x; cuplug_e < cuplug_n;
       cuplug_e += (unsigned long long)gridDim.x * 256) {{
    const index_type i = (index_type)cuplug_e;
{item}{prev}    {{
      {output_statement};
    }}
  }}
}}
"""
    return GenericScan(src, name, t, words, flags, uses_last)
