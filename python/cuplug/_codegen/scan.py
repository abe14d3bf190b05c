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

Two kinds of module come out of here:

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

#: Tiles per group of the look-back (one per lane of the warp that reads them).
GROUP = 32

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


# ---- the device code shared by every scan kernel -----------------------------------------------

_PRIMITIVES = r"""
#define CUPLUG_BLOCK {block}
#define CUPLUG_BLOCKIDX {blockidx}
#define CUPLUG_WARPS (CUPLUG_BLOCK / 32)
#define CUPLUG_V {vec}
#define CUPLUG_C {chunks}
#define CUPLUG_ITEMS (CUPLUG_V * CUPLUG_C)
#define CUPLUG_TILE (CUPLUG_BLOCK * CUPLUG_ITEMS)
#define CUPLUG_WARP_SPAN (32 * CUPLUG_ITEMS)
#define CUPLUG_GROUP {group}
#define CUPLUG_W {words}
#define CUPLUG_FULL 0xffffffffu

static_assert(sizeof(cuplug_val) <= 4 * CUPLUG_W, "scan value larger than its look-back slot");

// Any trivially copyable value moves as 32-bit words: shuffles, and stores / loads through L2.
#define CUPLUG_VW ((sizeof(cuplug_val) + 3) / 4)

__device__ __forceinline__ cuplug_val cuplug_shfl_up(const cuplug_val &v, const unsigned d)
{{
  unsigned w[CUPLUG_VW] = {{}};
  memcpy(w, &v, sizeof(cuplug_val));
#pragma unroll
  for (unsigned k = 0; k < CUPLUG_VW; ++k)
    w[k] = __shfl_up_sync(CUPLUG_FULL, w[k], d);
  cuplug_val r;
  memcpy(&r, w, sizeof(cuplug_val));
  return r;
}}

__device__ __forceinline__ cuplug_val cuplug_shfl_idx(const cuplug_val &v, const int src)
{{
  unsigned w[CUPLUG_VW] = {{}};
  memcpy(w, &v, sizeof(cuplug_val));
#pragma unroll
  for (unsigned k = 0; k < CUPLUG_VW; ++k)
    w[k] = __shfl_sync(CUPLUG_FULL, w[k], src);
  cuplug_val r;
  memcpy(&r, w, sizeof(cuplug_val));
  return r;
}}

// ---- publication of look-back values: status word (8 bytes per entry) + slot ----
// Entry k: tile aggregate k; tiles + g: group total T(g); tiles + groups + g: group prefix GP(g).

__device__ __forceinline__ unsigned long long cuplug_ld_acquire(const unsigned long long *p)
{{
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}}

__device__ __forceinline__ void cuplug_st_release(unsigned long long *p, unsigned long long v)
{{
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}}

__device__ __forceinline__ unsigned cuplug_ld_cg(const unsigned *p)
{{
  unsigned v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}}

__device__ __forceinline__ void cuplug_st_cg(unsigned *p, unsigned v)
{{
  asm volatile("st.global.cg.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}}

struct cuplug_channels
{{
  unsigned long long *status;
  unsigned *slots;
}};

__device__ __forceinline__ cuplug_channels cuplug_channels_of(unsigned char *state,
                                                             unsigned long long entries)
{{
  cuplug_channels c;
  c.status = reinterpret_cast<unsigned long long *>(state + 16);
  c.slots = reinterpret_cast<unsigned *>(state + 16 + 8 * entries);
  return c;
}}

__device__ __forceinline__ void cuplug_publish(const cuplug_channels &c, unsigned long long k,
                                               const cuplug_val &v)
{{
  unsigned w[CUPLUG_VW] = {{}};
  memcpy(w, &v, sizeof(cuplug_val));
  if (CUPLUG_VW == 1) {{
    // The value travels in the status word: one store publishes both.
    cuplug_st_release(c.status + k, (1ull << 32) | w[0]);
  }} else {{
#pragma unroll
    for (unsigned q = 0; q < CUPLUG_VW; ++q)
      cuplug_st_cg(c.slots + k * CUPLUG_W + q, w[q]);
    cuplug_st_release(c.status + k, 1ull << 32);  // release: the slot is visible first
  }}
}}

// True (and the value) when entry k is published.
__device__ __forceinline__ bool cuplug_poll(const cuplug_channels &c, unsigned long long k,
                                            cuplug_val &v)
{{
  const unsigned long long s = cuplug_ld_acquire(c.status + k);
  if (!(s >> 32))
    return false;
  unsigned w[CUPLUG_VW] = {{}};
  if (CUPLUG_VW == 1) {{
    w[0] = (unsigned)s;
  }} else {{
#pragma unroll
    for (unsigned q = 0; q < CUPLUG_VW; ++q)
      w[q] = cuplug_ld_cg(c.slots + k * CUPLUG_W + q);
  }}
  memcpy(&v, w, sizeof(cuplug_val));
  return true;
}}

__device__ __forceinline__ void cuplug_backoff(unsigned &ns)
{{
#if __CUDA_ARCH__ >= 700
  if (ns)
    __nanosleep(ns);
#endif
  ns = ns ? (ns < {max_sleep} ? 2 * ns : ns) : {min_sleep};
}}

__device__ __forceinline__ cuplug_val cuplug_wait(const cuplug_channels &c, unsigned long long k)
{{
  cuplug_val v;
  unsigned ns = 0;
  while (!cuplug_poll(c, k, v))
    cuplug_backoff(ns);
  return v;
}}

// GP(target) for the calling warp (every lane returns it): the nearest published GP(j) at or
// before target, then T(j+1) .. T(target) folded onto it in order; published when folded.
__device__ cuplug_val cuplug_group_prefix(const cuplug_channels &c, unsigned long long tiles,
                                          long long target)
{{
  const unsigned lane = threadIdx.x & 31;
  const unsigned long long groups = (tiles + CUPLUG_GROUP - 1) / CUPLUG_GROUP;
  const unsigned long long t_base = tiles, gp_base = tiles + groups;
  long long top = target;
  bool folded = false;  // GP(target) was not published: computed here
  cuplug_val acc;
  for (;;) {{
    // Each lane waits until its group has a total or a prefix (every group gets a total; group
    // 0's is its prefix, so the walk ends there at the latest).
    const long long k = top - (long long)lane;
    cuplug_val val;
    bool is_gp = false;
    if (k >= 0) {{
      unsigned ns = 0;
      for (;;) {{
        if (cuplug_poll(c, gp_base + k, val)) {{
          is_gp = true;
          break;
        }}
        if (cuplug_poll(c, t_base + k, val)) {{
          is_gp = k == 0;  // GP(0) is T(0)
          break;
        }}
        cuplug_backoff(ns);
      }}
    }}
    const unsigned found = __ballot_sync(CUPLUG_FULL, is_gp);
    if (found) {{
      const int f = __ffs(found) - 1;  // the nearest group with its prefix
      acc = cuplug_shfl_idx(val, f);
      folded = top - f != target;
      for (int q = f - 1; q >= 0; --q)
        acc = cuplug_op(acc, cuplug_shfl_idx(val, q));
      break;
    }}
    top -= 32;  // all 32 had only totals: look further back, fold these later
  }}
  for (long long base = top + 1; base <= target; base += 32) {{
    const long long k = base + (long long)lane;
    cuplug_val val;
    if (k <= target)
      val = cuplug_wait(c, t_base + k);
    const long long count = target - base + 1 < 32 ? target - base + 1 : 32;
    for (int q = 0; q < count; ++q)
      acc = cuplug_op(acc, cuplug_shfl_idx(val, q));
  }}
  if (folded && lane == 0)
    cuplug_publish(c, gp_base + target, acc);
  return acc;
}}

// Warp 0 of tile `tile` (aggregate `agg`): publishes the aggregate (and the group's T and GP
// when it is a group's last tile) and returns the tile's exclusive prefix (tile > 0).
__device__ cuplug_val cuplug_look_back(unsigned char *state, unsigned long long tiles,
                                       unsigned long long tile, const cuplug_val &agg)
{{
  const unsigned lane = threadIdx.x & 31;
  const unsigned long long groups = (tiles + CUPLUG_GROUP - 1) / CUPLUG_GROUP;
  const cuplug_channels c = cuplug_channels_of(state, tiles + 2 * groups);
  const unsigned long long g = tile / CUPLUG_GROUP;
  const unsigned p = (unsigned)(tile % CUPLUG_GROUP);
  if (lane == 0 && p != CUPLUG_GROUP - 1)
    cuplug_publish(c, tile, agg);
  // C(p): the group's earlier aggregates, one per lane, in a fixed shuffle tree.
  cuplug_val v = agg;
  if (lane < p)
    v = cuplug_wait(c, g * CUPLUG_GROUP + lane);
#pragma unroll
  for (unsigned d = 1; d < 32; d <<= 1) {{
    const cuplug_val o = cuplug_shfl_up(v, d);
    if (lane >= d && lane <= p)
      v = cuplug_op(o, v);
  }}
  cuplug_val in_group, total;
  if (p > 0)
    in_group = cuplug_shfl_idx(v, p - 1);
  const bool last = p == CUPLUG_GROUP - 1;
  if (last) {{
    total = cuplug_shfl_idx(v, p);
    if (lane == 0)
      cuplug_publish(c, tiles + g, total);  // (readers take T(0) for GP(0))
  }}
  if (g == 0)
    return in_group;
  const cuplug_val before = cuplug_group_prefix(c, tiles, (long long)g - 1);
  if (last && lane == 0)
    cuplug_publish(c, tiles + groups + g, cuplug_op(before, total));  // the chain's next link
  return p > 0 ? cuplug_op(before, in_group) : before;
}}
"""

_TILE_KERNEL = r"""
extern "C" __global__ void __launch_bounds__(CUPLUG_BLOCK) {name}(
    {params}const unsigned long long cuplug_n, unsigned char *cuplug_state)
{{
  __shared__ unsigned cuplug_tile_s;
  // Raw storage: __shared__ variables may not have constructors (complex has one).
  __shared__ alignas(cuplug_val) unsigned char cuplug_warp_raw[CUPLUG_WARPS * sizeof(cuplug_val)];
  __shared__ alignas(cuplug_val) unsigned char cuplug_prefix_raw[sizeof(cuplug_val)];
  cuplug_val *const cuplug_warp_s = reinterpret_cast<cuplug_val *>(cuplug_warp_raw);
  cuplug_val *const cuplug_prefix_s = reinterpret_cast<cuplug_val *>(cuplug_prefix_raw);
  const unsigned cuplug_lane = threadIdx.x & 31, cuplug_warp = threadIdx.x >> 5;
  const unsigned long long cuplug_tiles = (cuplug_n + CUPLUG_TILE - 1) / CUPLUG_TILE;
  const bool cuplug_single = gridDim.x == 1;
{prologue}
  cuplug_val cuplug_carry;  // one block: the inclusive value of the tiles done
  for (unsigned long long cuplug_step = 0;; ++cuplug_step) {{
    unsigned long long cuplug_t;
    if (cuplug_single) {{
      cuplug_t = cuplug_step;
      if (cuplug_t >= cuplug_tiles)
        break;
      if (cuplug_step)
        __syncthreads();  // everyone has read the shared values of the tile before
    }} else {{
      if (cuplug_step)
        break;
#if CUPLUG_BLOCKIDX
      cuplug_t = blockIdx.x;
#else
      if (threadIdx.x == 0)
        cuplug_tile_s = atomicAdd(reinterpret_cast<unsigned *>(cuplug_state), 1u);
      __syncthreads();
      cuplug_t = cuplug_tile_s;
#endif
    }}
    const unsigned long long cuplug_lane_base =
        cuplug_t * CUPLUG_TILE + cuplug_warp * CUPLUG_WARP_SPAN + cuplug_lane * CUPLUG_V;
    const bool cuplug_full = cuplug_t * CUPLUG_TILE + CUPLUG_TILE <= cuplug_n;
    (void)cuplug_full;
    cuplug_val cuplug_v[CUPLUG_C][CUPLUG_V];
{flags_decl}
    // ---- load: element (c, j) of this lane is cuplug_lane_base + c * 32 * V + j
{load}
    // ---- scan: within each chunk serially, across the lanes with shuffles, chunks in order
#pragma unroll
    for (int c = 0; c < CUPLUG_C; ++c) {{
#pragma unroll
      for (int j = 1; j < CUPLUG_V; ++j)
        cuplug_v[c][j] = cuplug_op(cuplug_v[c][j - 1], cuplug_v[c][j]);
    }}
    cuplug_val cuplug_pre[CUPLUG_C], cuplug_run;
#pragma unroll
    for (int c = 0; c < CUPLUG_C; ++c) {{
      cuplug_val t = cuplug_v[c][CUPLUG_V - 1];
#pragma unroll
      for (unsigned d = 1; d < 32; d <<= 1) {{
        const cuplug_val o = cuplug_shfl_up(t, d);
        if (cuplug_lane >= d)
          t = cuplug_op(o, t);
      }}
      const cuplug_val lp = cuplug_shfl_up(t, 1);
      const cuplug_val total = cuplug_shfl_idx(t, 31);
      if (c == 0) {{
        cuplug_pre[0] = lp;  // (lane > 0)
        cuplug_run = total;
      }} else {{
        cuplug_pre[c] = cuplug_lane > 0 ? cuplug_op(cuplug_run, lp) : cuplug_run;
        cuplug_run = cuplug_op(cuplug_run, total);
      }}
    }}
    if (cuplug_lane == 0)
      cuplug_warp_s[cuplug_warp] = cuplug_run;
    __syncthreads();
    cuplug_val cuplug_wp;  // (warp > 0) the tile's warps before this one
    if (cuplug_warp > 0) {{
      cuplug_wp = cuplug_warp_s[0];
      for (unsigned w = 1; w < cuplug_warp; ++w)
        cuplug_wp = cuplug_op(cuplug_wp, cuplug_warp_s[w]);
    }}
    // ---- the tile's prefix: the running carry (one block) or the look-back
    const bool cuplug_has_tp = cuplug_t > 0;
    cuplug_val cuplug_tp;
    if (cuplug_single) {{
      cuplug_val agg = cuplug_warp_s[0];
#pragma unroll
      for (unsigned w = 1; w < CUPLUG_WARPS; ++w)
        agg = cuplug_op(agg, cuplug_warp_s[w]);
      cuplug_tp = cuplug_carry;
      cuplug_carry = cuplug_has_tp ? cuplug_op(cuplug_carry, agg) : agg;
    }} else {{
      if (cuplug_warp == 0) {{
        cuplug_val agg = cuplug_warp_s[0];
#pragma unroll
        for (unsigned w = 1; w < CUPLUG_WARPS; ++w)
          agg = cuplug_op(agg, cuplug_warp_s[w]);
        const cuplug_val prefix = cuplug_look_back(cuplug_state, cuplug_tiles, cuplug_t, agg);
        if (cuplug_lane == 0 && cuplug_has_tp)
          *cuplug_prefix_s = prefix;
      }}
      __syncthreads();
      if (cuplug_has_tp)
        cuplug_tp = *cuplug_prefix_s;
    }}
    const bool cuplug_has_b = cuplug_has_tp || cuplug_warp > 0;
    cuplug_val cuplug_b;
    if (cuplug_has_tp)
      cuplug_b = cuplug_warp > 0 ? cuplug_op(cuplug_tp, cuplug_wp) : cuplug_tp;
    else if (cuplug_warp > 0)
      cuplug_b = cuplug_wp;
    // ---- results: prefix (+) element, stored
#pragma unroll
    for (int c = 0; c < CUPLUG_C; ++c) {{
      const bool has_x = cuplug_has_b || c > 0 || cuplug_lane > 0;
      cuplug_val x;
      if (cuplug_has_b)
        x = (c > 0 || cuplug_lane > 0) ? cuplug_op(cuplug_b, cuplug_pre[c]) : cuplug_b;
      else
        x = cuplug_pre[c];
      cuplug_val item[CUPLUG_V];
#pragma unroll
      for (int j = 0; j < CUPLUG_V; ++j)
        item[j] = has_x ? cuplug_op(x, cuplug_v[c][j]) : cuplug_v[c][j];
{store}
    }}
  }}
}}
"""


# One vector store per piece (NVVM leaves some struct stores as scalar ones); the memory clobber
# keeps every load of the tile (in place: the same addresses) before it.
_STORE_PIECE = r"""
__device__ __forceinline__ void cuplug_store_piece(cuplug_out_vec *p, const cuplug_out_vec &o)
{
  unsigned w[(sizeof(cuplug_out_vec) + 3) / 4] = {};
  memcpy(w, &o, sizeof(cuplug_out_vec));
  if (sizeof(cuplug_out_vec) == 16)
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]),
                 "r"(w[sizeof(w) > 4 ? 1 : 0]), "r"(w[sizeof(w) > 8 ? 2 : 0]),
                 "r"(w[sizeof(w) > 12 ? 3 : 0]) : "memory");
  else if (sizeof(cuplug_out_vec) == 8)
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(w[0]),
                 "r"(w[sizeof(w) > 4 ? 1 : 0]) : "memory");
  else
    *p = o;
}
"""


def _ctype(dtype):
    return _dtypes.ctype(dtype)


def _is_pow2(x):
    return x > 0 and not x & (x - 1)


def _value_code(scan_ct, scan_expr, neutral, segmented):
    """typedefs, the user's operator as cuplug_scan_op, and cuplug_val / cuplug_op over it."""
    code = (
        "__device__ __forceinline__ scan_type cuplug_scan_op(const scan_type &a, "
        "const scan_type &b, const bool across_seg_boundary)\n"
        f"{{\n  return ({scan_expr});\n}}\n"
    )
    if neutral is not None:
        code += (
            "__device__ __forceinline__ scan_type cuplug_neutral()\n"
            f"{{\n  return (scan_type)({neutral});\n}}\n"
        )
    if segmented:
        code += """\
struct cuplug_val
{
  scan_type v;
  bool s;  // a segment starts in the range this value covers
};
__device__ __forceinline__ cuplug_val cuplug_op(const cuplug_val &a, const cuplug_val &b)
{
  cuplug_val r;
  r.v = cuplug_scan_op(a.v, b.v, b.s);
  r.s = a.s || b.s;
  return r;
}
#define CUPLUG_VALUE(x) ((x).v)
"""
    else:
        code += """\
typedef scan_type cuplug_val;
__device__ __forceinline__ cuplug_val cuplug_op(const cuplug_val &a, const cuplug_val &b)
{
  return cuplug_scan_op(a, b, false);
}
#define CUPLUG_VALUE(x) (x)
"""
    return code


def _primitives(t, words):
    return _PRIMITIVES.format(
        block=t.block,
        blockidx=t.blockidx,
        vec=t.vec,
        chunks=t.items // t.vec,
        group=GROUP,
        words=words,
        min_sleep=t.min_sleep,
        max_sleep=t.max_sleep,
    )


def _indent(code, spaces):
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else line for line in code.split("\n"))


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
    src += _value_code(_ctype(scan_dtype), scan_expr, neutral, segmented)
    src += _primitives(t, words)
    if vector:
        src += (
            "struct alignas(CUPLUG_V * sizeof(in_type)) cuplug_in_vec\n{\n"
            "  in_type v[CUPLUG_V];\n};\n"
            f"struct alignas({piece} * sizeof(out_type)) cuplug_out_vec\n{{\n"
            f"  out_type v[{piece}];\n}};\n" + _STORE_PIECE
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
        + _indent(assign("c", "j", "x.v[j]"), 2)
        + "\n}\n"
    )
    body_scalar = (
        "#pragma unroll\nfor (int j = 0; j < CUPLUG_V; ++j) {\n"
        "  const unsigned long long e = e0 + j < cuplug_n ? e0 + j : cuplug_n - 1;\n"
        + _indent(assign("c", "j", "cuplug_in[(long long)e * cuplug_in_step]"), 2)
        + "\n}\n"
    )
    if vector:
        load += (
            "  if (cuplug_vec_ok && cuplug_full) {\n"
            + _indent(body_vec, 4)
            + "\n  } else {\n"
            + _indent(body_scalar, 4)
            + "\n  }\n"
        )
    else:
        load += _indent(body_scalar, 2) + "\n"
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
            "} else {\n" + _indent(scalar_store, 2) + "\n}\n"
        )
    else:
        store += scalar_store
    src += _TILE_KERNEL.format(
        name=name,
        params=params,
        prologue="",
        flags_decl="",
        load=_indent(load, 4),
        store=_indent(store, 6),
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
    src += _value_code(_ctype(scan_dtype), scan_expr, neutral, segmented)
    src += _primitives(t, words)
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
        + _indent(fetch, 6)
        + f"\n      const scan_type a = ({input_expr});\n"
        + _indent(value, 6)
        + "\n    } else {\n"
        + _indent(pad, 6)
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
    src += _TILE_KERNEL.format(
        name=f"{name}_scan",
        params=params,
        prologue="  const index_type N = (index_type)cuplug_n;\n  (void)N;",
        flags_decl="    bool cuplug_sf[CUPLUG_C][CUPLUG_V];" if flags else "",
        load=_indent(load, 4),
        store=_indent(store, 6),
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
