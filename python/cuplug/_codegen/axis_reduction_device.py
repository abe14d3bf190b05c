"""The device code of the axis-reduction kernels (cuplug._codegen.axis_reduction fills it in):
the parameter struct and shared helpers (COMMON), the element map (MAP), and the two entry
shapes - a warp or block per output (ROWS) and a thread per run of outputs (COLS). str.format
templates; the design is described in axis_reduction.py's docstring.
"""

from __future__ import annotations

__all__ = ["COLS", "COMMON", "MAP", "ROWS"]

COMMON = """\
#define CUPLUG_BLOCK {block}
#define UNROLL {unroll}
#define COLS_UNROLL {cols_unroll}
struct cuplug_params {{
  void *out;
  const void *in;
  unsigned long long m, n;
  long long s_red;
  unsigned long long chunk, splits;
  double denom;
  int nd, final, vec, group;
  unsigned long long shape[{maxd}];
  long long in_s[{maxd}], out_s[{maxd}];
}};
__device__ __forceinline__ acc_type cuplug_reduce(const acc_type a, const acc_type b)
{{
  return {reduce_expr};
}}
__device__ __forceinline__ acc_type cuplug_same(const acc_type v, const long long) {{ return v; }}
// Offsets (elements) of output o in the input and the output; o is C-order over the dims.
__device__ __forceinline__ void cuplug_offsets(unsigned long long o, const cuplug_params &p,
                                               long long &io, long long &oo)
{{
  io = 0;
  oo = 0;
#pragma unroll 1
  for (int j = p.nd - 1; j > 0; --j) {{
    const unsigned long long q = o / p.shape[j];
    const long long k = (long long)(o - q * p.shape[j]);
    io += k * p.in_s[j];
    oo += k * p.out_s[j];
    o = q;
  }}
  if (p.nd > 0) {{
    io += (long long)o * p.in_s[0];
    oo += (long long)o * p.out_s[0];
  }}
}}
__device__ __forceinline__ void cuplug_store(const cuplug_params &p, unsigned long long g,
                                             long long oo, const acc_type a)
{{
  const double denom = p.denom;
  (void)denom;
  if (p.final)
    static_cast<out_type *>(p.out)[oo] = {final_expr};
  else
    static_cast<acc_type *>(p.out)[g] = a;
}}
template <int BYTES> struct cuplug_word {{ struct type {{ unsigned char b[BYTES]; }}; }};
template <> struct cuplug_word<4> {{ typedef unsigned int type; }};
template <> struct cuplug_word<8> {{ typedef uint2 type; }};
template <> struct cuplug_word<16> {{ typedef uint4 type; }};
// V elements of T in one aligned load.
template <class T, int V> struct cuplug_vec {{
  typename cuplug_word<sizeof(T) * V>::type w;
  __device__ __forceinline__ T operator[](int j) const
  {{
    return reinterpret_cast<const T *>(&w)[j];
  }}
}};
"""

MAP = """\
__device__ __forceinline__ acc_type cuplug_map(const in_type x, const long long r)
{{
  (void)r;
  return {map_expr};
}}
"""

# Rows: group g = split * m + o (G threads: a warp or the block) reduces elements
# [split*chunk, +chunk) of output o; thread t takes (t + k*G)*V + j, then a fixed tree.
ROWS = """\
extern "C" __global__ void __launch_bounds__(CUPLUG_BLOCK) {entry}(const cuplug_params p)
{{
  typedef {src} T;
  constexpr int V = {vec};
  const unsigned G = p.group;
  const unsigned long long g = ((unsigned long long)blockIdx.x * CUPLUG_BLOCK + threadIdx.x) / G;
  if (g >= p.m * p.splits)
    return;  // the whole group: it shares g
  const unsigned lane = threadIdx.x % G;
  const unsigned long long split = p.splits == 1 ? 0 : g / p.m;
  const unsigned long long o = g - split * p.m;
  const unsigned long long r0 = split * p.chunk;
  const unsigned long long r1 = p.chunk < p.n - r0 ? r0 + p.chunk : p.n;
  long long io, oo;
  cuplug_offsets(o, p, io, oo);
  const T *row = static_cast<const T *>(p.in) + io;
  const unsigned long long step = (unsigned long long)G * V;
  unsigned long long r = r0 + (unsigned long long)lane * V;
  acc_type acc = {neutral};
  if (V > 1 && p.vec) {{
    // Whole blocks of UNROLL steps: every load issued before the values are combined.
    for (; r + (UNROLL - 1) * step + V <= r1; r += UNROLL * step) {{
      cuplug_vec<T, V> w[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
        w[u] = *reinterpret_cast<const cuplug_vec<T, V> *>(row + r + u * step);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int j = 0; j < V; ++j)
          acc = cuplug_reduce(acc, {get}(w[u][j], (long long)(r + u * step + j)));
    }}
  }}
  // The rest (everything when strided or unaligned) in the same order, V loads at a time.
  for (; r < r1; r += step) {{
    T v[V];
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (r + j < r1)
        v[j] = row[(long long)(r + j) * p.s_red];
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (r + j < r1)
        acc = cuplug_reduce(acc, {get}(v[j], (long long)(r + j)));
  }}
  // The group's values combined in a fixed tree in shared memory (raw storage: __shared__
  // variables may not have constructors, complex has one). Each step reads slots [s, 2s) of
  // the group and writes [0, s): no race within a step.
  __shared__ alignas(acc_type) unsigned char cuplug_smem[CUPLUG_BLOCK * sizeof(acc_type)];
  acc_type *sm = reinterpret_cast<acc_type *>(cuplug_smem);
  const unsigned t = threadIdx.x;
  sm[t] = acc;
  if (G > 32) {{
    __syncthreads();
    for (unsigned s = G / 2; s >= 32; s >>= 1) {{
      if (lane < s)
        sm[t] = cuplug_reduce(sm[t], sm[t + s]);
      __syncthreads();
    }}
  }} else {{
    __syncwarp();
  }}
  if (lane < 32) {{
#pragma unroll
    for (unsigned s = 16; s > 0; s >>= 1) {{
      if (lane < s)
        sm[t] = cuplug_reduce(sm[t], sm[t + s]);
      __syncwarp();
    }}
  }}
  if (lane == 0)
    cuplug_store(p, g, oo, sm[t]);
}}
"""

# Columns: thread t = split * ceil(m / V) + c owns outputs c*V .. c*V+V-1 of its split, which
# lie in one run of the innermost kept dimension (the caller makes its length a multiple of V).
COLS = """\
extern "C" __global__ void __launch_bounds__(CUPLUG_BLOCK) {entry}(const cuplug_params p)
{{
  typedef {src} T;
  constexpr int V = {vec};
  const unsigned W = p.group;  // outputs per thread, V or a divisor of it
  const unsigned long long t = (unsigned long long)blockIdx.x * CUPLUG_BLOCK + threadIdx.x;
  const unsigned long long per = (p.m + W - 1) / W;
  if (t >= per * p.splits)
    return;
  const unsigned long long split = p.splits == 1 ? 0 : t / per;
  const unsigned long long c = t - split * per;
  const unsigned long long r0 = split * p.chunk;
  const unsigned long long r1 = p.chunk < p.n - r0 ? r0 + p.chunk : p.n;
  long long io, oo;
  cuplug_offsets(c * W, p, io, oo);
  const long long is = p.nd > 0 ? p.in_s[p.nd - 1] : 0;
  const T *col = static_cast<const T *>(p.in) + io;
  acc_type acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k)
    acc[k] = {neutral};
  unsigned long long r = r0;
  if (V > 1 && p.vec) {{  // W == V values of a row, consecutive in memory and aligned
    for (; r + COLS_UNROLL <= r1; r += COLS_UNROLL) {{
      cuplug_vec<T, V> w[COLS_UNROLL];
#pragma unroll
      for (int u = 0; u < COLS_UNROLL; ++u)
        w[u] = *reinterpret_cast<const cuplug_vec<T, V> *>(col + (long long)(r + u) * p.s_red);
#pragma unroll
      for (int u = 0; u < COLS_UNROLL; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k)
          acc[k] = cuplug_reduce(acc[k], {get}(w[u][k], (long long)(r + u)));
    }}
  }}
  const int live = c * W + W <= p.m ? (int)W : (int)(p.m - c * W);
  for (; r < r1; ++r) {{
    T v[V];
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (k < live)
        v[k] = col[(long long)r * p.s_red + k * is];
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (k < live)
        acc[k] = cuplug_reduce(acc[k], {get}(v[k], (long long)r));
  }}
  const unsigned long long base = split * p.m + c * W;
  const long long os = p.nd > 0 ? p.out_s[p.nd - 1] : 0;
#pragma unroll
  for (int k = 0; k < V; ++k)
    if (k < live)
      cuplug_store(p, base + k, oo + k * os, acc[k]);
}}
"""
