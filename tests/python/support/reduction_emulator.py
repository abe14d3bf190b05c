"""Runs the generated axis-reduction kernels on the host, so CI checks what they compute without
a GPU: the sources of cuplug._codegen.axis_reduction are compiled by the host C++ compiler with
a shim for CUDA's built-ins (a block is 256 fibers taking turns between barriers, __shared__ is
static storage, blocks run one after another), and the launches of a plan
(cuplug._kernels.axis_reduction_plan.plan_launches) run over host memory with the same parameter
blocks the GPU gets. Vector loads check their alignment (a GPU faults on a misaligned one)."""

from __future__ import annotations

import ctypes
import hashlib
import os
import pathlib
import shutil
import subprocess
import tempfile

import numpy as np

from cuplug._codegen import axis_reduction as ar

_SHIM = r"""
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ucontext.h>
#include <vector_types.h>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(x)
struct emu_dim3 { unsigned x, y, z; };
inline emu_dim3 threadIdx, blockIdx;
// A block's 256 threads are fibers on one host thread, run in turns: each runs until it
// reaches a barrier or returns, and a turn starts once every live thread has had its go, so a
// barrier holds until every thread still running has reached one (a GPU would hang otherwise).
inline ucontext_t emu_main, emu_fiber[256];
inline bool emu_done[256];
inline int emu_current;
inline void __syncthreads() { swapcontext(&emu_fiber[emu_current], &emu_main); }
inline void __syncwarp() { swapcontext(&emu_fiber[emu_current], &emu_main); }
inline float __int_as_float(int v) { float f; std::memcpy(&f, &v, 4); return f; }
inline double __longlong_as_double(long long v) { double f; std::memcpy(&f, &v, 8); return f; }
inline int emu_misaligned;
template <class T> inline const T *emu_checked(const void *p) {
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0) emu_misaligned = 1;
  return static_cast<const T *>(p);
}
using std::fmax; using std::isnan; using std::sqrt;
"""

_RUNNER = r"""
static void (*emu_entry)(const void *);
static const void *emu_params;
static void emu_thread() {
  emu_entry(emu_params);
  emu_done[emu_current] = true;
}
extern "C" int emu_launch(void (*entry)(const void *), unsigned grid, const void *params) {
  static char *stacks = static_cast<char *>(std::malloc(256 * 65536));
  emu_misaligned = 0;
  emu_entry = entry;
  emu_params = params;
  for (unsigned b = 0; b < grid; ++b) {
    for (int t = 0; t < 256; ++t) {
      getcontext(&emu_fiber[t]);
      emu_fiber[t].uc_stack.ss_sp = stacks + t * 65536;
      emu_fiber[t].uc_stack.ss_size = 65536;
      emu_fiber[t].uc_link = &emu_main;
      makecontext(&emu_fiber[t], emu_thread, 0);
      emu_done[t] = false;
    }
    blockIdx = {b, 0, 0};
    for (bool live = true; live;) {
      live = false;
      for (int t = 0; t < 256; ++t) {
        if (emu_done[t])
          continue;
        emu_current = t;
        threadIdx = {unsigned(t), 0, 0};
        swapcontext(&emu_main, &emu_fiber[t]);
        live = true;
      }
    }
  }
  return emu_misaligned;
}
"""


def _host_source(specs):
    heads = {"#include <cuda_fp16.h>"}
    parts = []
    for i, sp in enumerate(specs):
        src = ar.generate(sp)
        lines = src.splitlines()
        heads.update(line for line in lines if line.startswith("#include"))
        body = "\n".join(line for line in lines if not line.startswith("#include"))
        body = body.replace("__shared__ alignas(acc_type)", "alignas(acc_type) static")
        body = body.replace(
            "*reinterpret_cast<const cuplug_vec<T, V> *>(", "*emu_checked<cuplug_vec<T, V>>("
        )
        wrappers = "".join(
            f'extern "C" void emu_{ar.entry(sp.name, e)}(const void *p) '
            f"{{ {ar.entry(sp.name, e)}(*static_cast<const cuplug_params *>(p)); }}\n"
            for e in ar.ENTRIES
        )
        parts.append(f"namespace emu{i} {{\n{body}\n{wrappers}}}\n")
    order = sorted(heads, key=lambda h: "complex" in h)  # cuda_fp16.h first
    return _SHIM + "\n".join(order) + "\n" + "".join(parts) + _RUNNER


def compiler():
    """The host C++ compiler and CUDA include flags, or None when either is missing."""
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("clang++")
    cuda = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
    if cxx is None or not (cuda / "cuda_fp16.h").is_file():
        return None
    return [cxx, "-std=c++20", "-O0", "-w", "-shared", "-fPIC",
            f"-I{cuda}", f"-I{cuda / 'cccl'}"]  # fmt: skip


class Emulator:
    """The kernels of ``specs`` compiled for the host (cached by source hash)."""

    def __init__(self, specs):
        cmd = compiler()
        if cmd is None:
            raise RuntimeError("no host C++ compiler or CUDA headers")
        source = _host_source(specs)
        digest = hashlib.sha256((source + " ".join(cmd)).encode()).hexdigest()[:20]
        cache = pathlib.Path(tempfile.gettempdir()) / "cuplug-reduction-emulator"
        cache.mkdir(exist_ok=True)
        lib = cache / f"{digest}.so"
        if not lib.exists():
            src = cache / f"{digest}.cpp"
            src.write_text(source)
            tmp = cache / f"{digest}.{os.getpid()}.so"
            subprocess.run([*cmd, str(src), "-o", str(tmp)], check=True, capture_output=True)
            tmp.replace(lib)
        self.lib = ctypes.CDLL(str(lib))
        self.lib.emu_launch.restype = ctypes.c_int
        self.lib.emu_launch.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_char_p]

    def launch(self, sp, kind, grid, params):
        entry = getattr(self.lib, f"emu_{ar.entry(sp.name, kind)}")
        if self.lib.emu_launch(ctypes.cast(entry, ctypes.c_void_p), grid, params):
            raise AssertionError(f"{sp.name} {kind}: a vector load was misaligned")

    def run(self, sp, launches, temps, x, out):
        """Runs a plan's launches over host arrays x (input) and out (output, its strides
        are the plan's); returns out."""
        bufs = {"in": x, "out": out}
        keep = [np.zeros(max(n, 16) + 16, np.uint8) for n in temps]
        for k, b in enumerate(keep):  # 16-byte aligned, as device allocations are
            off = (-b.ctypes.data) % 16
            bufs[k] = b[off:]
        isz, osz = x.dtype.itemsize, out.dtype.itemsize

        def address(buf, off):
            scale = isz if buf == "in" else osz if buf == "out" else sp.acc_size
            return bufs[buf].ctypes.data + off * scale

        for L in launches:
            params = ar.PARAMS.pack(address(L.dst, L.dst_off), address(L.src, L.src_off), *L.fields)
            self.launch(sp, L.kind, L.grid, params)
        return out
