"""Device helper functions the operation table's expressions call (NumPy's integer floor
division and remainder, float divmod, integer power, shifts past the width, mixed-signedness
and complex comparisons, complex sign). Each is emitted inside an include guard, so that the
preambles of many kernels can share one source (one NVRTC program per batch).
"""

from __future__ import annotations

__all__ = ["HELPERS", "guarded"]

_SIGNED = "(T(-1) < T(0))"

HELPERS = {
    "floordiv_int": f"""
template <class T> __device__ __forceinline__ T cuplug_floordiv(T a, T b) {{
  if (b == 0) return T(0);
  if constexpr ({_SIGNED}) {{
    if (b == T(-1)) return T(0 - (unsigned long long)a);
    T q = a / b;
    if (((a > 0) != (b > 0)) && q * b != a) --q;
    return q;
  }}
  return a / b;
}}""",
    "mod_int": f"""
template <class T> __device__ __forceinline__ T cuplug_mod(T a, T b) {{
  if (b == 0) return T(0);
  if constexpr ({_SIGNED}) {{
    if (b == T(-1)) return T(0);
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }}
  return a % b;
}}""",
    # NumPy's npy_divmod / npy_floor_divide / npy_remainder for floating point.
    "divmod_float": """
template <class T> __device__ __forceinline__ T cuplug_fdivmod(T a, T b, T *modulus) {
  T mod = fmod(a, b);
  if (!b) { *modulus = mod; return a / b; }
  T div = (a - mod) / b;
  if (mod) {
    if ((b < 0) != (mod < 0)) { mod += b; div -= T(1); }
  } else {
    mod = copysign(T(0), b);
  }
  T floordiv;
  if (div) {
    floordiv = floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
  } else {
    floordiv = copysign(T(0), a / b);
  }
  *modulus = mod;
  return floordiv;
}
template <class T> __device__ __forceinline__ T cuplug_ffloordiv(T a, T b) {
  if (!b) return a / b;
  T mod;
  return cuplug_fdivmod(a, b, &mod);
}
template <class T> __device__ __forceinline__ T cuplug_fmod_py(T a, T b) {
  if (!b) return fmod(a, b);
  T mod;
  cuplug_fdivmod(a, b, &mod);
  return mod;
}""",
    "pow_int": f"""
template <class T> __device__ __forceinline__ T cuplug_ipow(T a, T b) {{
  if constexpr ({_SIGNED}) {{
    if (b < 0) {{
      // NumPy raises for negative integer powers; a kernel cannot: 1 and -1 have exact
      // answers, every other base gives 0 (the integer part of the real answer).
      if (a == T(1)) return T(1);
      if (a == T(-1)) return (b & 1) ? T(-1) : T(1);
      return T(0);
    }}
  }}
  T r = 1;
  while (b) {{
    if (b & 1) r = (T)(r * a);
    b = (T)(b >> 1);
    a = (T)(a * a);
  }}
  return r;
}}""",
    "shift": """
template <class T, class S> __device__ __forceinline__ T cuplug_lshift(T a, S b) {
  if ((unsigned long long)b < sizeof(T) * 8)
    return (T)((unsigned long long)a << b);
  return T(0);
}
template <class T, class S> __device__ __forceinline__ T cuplug_rshift(T a, S b) {
  if ((unsigned long long)b < sizeof(T) * 8) return (T)(a >> b);
  if constexpr (T(-1) < T(0)) return (a < 0) ? T(-1) : T(0);
  return T(0);
}""",
    "cmp_mixed": """
template <class A, class B> __device__ __forceinline__ bool cuplug_lt(A a, B b) {
  if constexpr ((A(-1) < A(0)) && !(B(-1) < B(0)))
    return a < 0 || (unsigned long long)a < (unsigned long long)b;
  else if constexpr (!(A(-1) < A(0)) && (B(-1) < B(0)))
    return b > 0 && (unsigned long long)a < (unsigned long long)b;
  else
    return a < b;
}
template <class A, class B> __device__ __forceinline__ bool cuplug_eq(A a, B b) {
  if constexpr ((A(-1) < A(0)) && !(B(-1) < B(0)))
    return !(a < 0) && (unsigned long long)a == (unsigned long long)b;
  else if constexpr (!(A(-1) < A(0)) && (B(-1) < B(0)))
    return !(b < 0) && (unsigned long long)a == (unsigned long long)b;
  else
    return a == b;
}""",
    "cmp_complex": """
template <class C> __device__ __forceinline__ bool cuplug_clt(C a, C b) {
  return (a.real() < b.real() && !isnan(a.imag()) && !isnan(b.imag())) ||
         (a.real() == b.real() && a.imag() < b.imag());
}
template <class C> __device__ __forceinline__ bool cuplug_cle(C a, C b) {
  return (a.real() < b.real() && !isnan(a.imag()) && !isnan(b.imag())) ||
         (a.real() == b.real() && a.imag() <= b.imag());
}
template <class C> __device__ __forceinline__ bool cuplug_cnan(C a) {
  return isnan(a.real()) || isnan(a.imag());
}""",
    "sign_complex": """
template <class C> __device__ __forceinline__ C cuplug_csign(C a) {
  if (a.real() == 0 && a.imag() == 0) return C(0);
  return a / cuda::std::abs(a);
}""",
}


def guarded(name):
    """The helper `name`'s definition inside its include guard."""
    body = HELPERS[name]
    g = "CUPLUG_HELPER_" + name.upper()
    return f"#ifndef {g}\n#define {g}{body}\n#endif\n"
