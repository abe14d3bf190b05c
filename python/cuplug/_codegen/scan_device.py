"""The device code every scan kernel shares (cuplug._codegen.scan generates the kernels around
it): the tile loads and in-tile scan, the deterministic decoupled look-back with its
publication protocol, the kernel skeleton the array and generic scans fill in, the vector store
of a piece, and the value type (with segment flags) over the user's operator. The design is
described in scan.py's docstring.
"""

from __future__ import annotations

__all__ = ["GROUP", "STORE_PIECE", "TILE_KERNEL", "indent", "primitives", "value_code"]

#: Tiles per look-back group (one warp's lanes read a group's aggregates).
GROUP = 32

# ---- the device code shared by every scan kernel -----------------------------------------------

PRIMITIVES = r"""
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

TILE_KERNEL = r"""
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
STORE_PIECE = r"""
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


def value_code(scan_ct, scan_expr, neutral, segmented):
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


def primitives(t, words):
    """The shared device code for tuning t and look-back slots of `words` 32-bit words."""
    return PRIMITIVES.format(
        block=t.block,
        blockidx=t.blockidx,
        vec=t.vec,
        chunks=t.items // t.vec,
        group=GROUP,
        words=words,
        min_sleep=t.min_sleep,
        max_sleep=t.max_sleep,
    )


def indent(code, spaces):
    """code with each non-blank line indented by `spaces`."""
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else line for line in code.split("\n"))
