"""Compile times: a cold NVRTC compile through cuplug against a raw NVRTC call on the same source
(ctypes on the libnvrtc cuplug loaded, in this script), a disk-cache hit, an in-memory hit, and
nvcc cold and cached. Needs no GPU (the arch is given), but the goals are for the GPU machine.

Usage: python tests/benchmarks/bench_compile.py [--repeats R] [--json-out FILE]
Goals: cold <= 1.2 x raw NVRTC; disk hit <= 0.5 ms; in-memory hit <= 1 us. Reported, not asserted.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time
import uuid

from bench_common import write_json

SCRIPT = "bench_compile"
ARCH = "sm_90"
# The seed's kernel plus a little arithmetic, so the compiler has something to do.
KERNEL = """
extern "C" __global__ void double_array(float *a, int n) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < n) {
    float x = a[idx];
    a[idx] = x * 2.0f + __sinf(x) * 0.0f;
  }
}
"""


def fresh_source() -> str:
    """New text each time, so no cache (ours or NVRTC's) has seen it."""
    return f"// {uuid.uuid4()}\n{KERNEL}"


def loaded_nvrtc() -> str:
    """Path of the libnvrtc this process loaded (through cuplug's nvrtc plugin)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/libnvrtc.so" in path:
                return path
    raise SystemExit(f"{SCRIPT}: libnvrtc is not loaded; is the nvrtc plugin built?")


class RawNvrtc:
    """nvrtcCreateProgram / CompileProgram / GetCUBIN / DestroyProgram, nothing else."""

    def __init__(self, path: str):
        self.lib = ctypes.CDLL(path)
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(self, r: int, what: str) -> None:
        if r != 0:
            raise RuntimeError(f"{what}: {self.lib.nvrtcGetErrorString(r).decode()}")

    def compile(self, source: str, options: list[str]) -> bytes:
        prog = ctypes.c_void_p()
        self.check(
            self.lib.nvrtcCreateProgram(
                ctypes.byref(prog), source.encode(), b"kernel.cu", 0, None, None
            ),
            "nvrtcCreateProgram",
        )
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            self.check(self.lib.nvrtcCompileProgram(prog, len(options), opts), "compile")
            size = ctypes.c_size_t()
            self.check(self.lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "GetCUBINSize")
            buf = ctypes.create_string_buffer(size.value)
            self.check(self.lib.nvrtcGetCUBIN(prog, buf), "GetCUBIN")
            return buf.raw
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))


def seconds(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def per_call(fn, calls: int, repeats: int) -> float:
    """Best of `repeats` averages over `calls` calls (for sub-microsecond work)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="cold NVRTC compiles of each kind")
    parser.add_argument("--nvcc-repeats", type=int, default=3)
    parser.add_argument("--json-out")
    args = parser.parse_args()

    try:
        from cuplug import compiler
        from cuplug._core import _compiler as cc
    except ImportError as e:
        print(f"{SCRIPT}: skipped: cannot import cuplug ({e}); set PYTHONPATH=<build>/python")
        sys.exit(0)

    cache_dir = tempfile.mkdtemp(prefix="cuplug-bench-cache-")
    os.environ.pop("CUPLUG_DISABLE_CACHE", None)

    def cuplug_cold(backend: str) -> None:
        compiler.compile(
            fresh_source(), arch=ARCH, backend=backend, no_extern_c=True, cache_dir=cache_dir
        )

    cuplug_cold("nvrtc")  # loads the plugin (and libnvrtc), warms NVRTC up
    raw = RawNvrtc(loaded_nvrtc())
    raw_options = [f"-arch={ARCH}"]
    raw.compile(fresh_source(), raw_options)

    # Interleaved, so drift (other load, clocks) hits both alike.
    cold, raw_times = [], []
    for _ in range(args.repeats):
        cold += seconds(lambda: cuplug_cold("nvrtc"), 1)
        src = fresh_source()
        raw_times += seconds(lambda src=src: raw.compile(src, raw_options), 1)
    cold_ms = statistics.median(cold) * 1e3
    raw_ms = statistics.median(raw_times) * 1e3

    # Disk hit: the entry is on disk, the memory layer is emptied before each (untimed).
    disk_src = fresh_source()
    disk_req = cc.CompileRequest(disk_src, arch=ARCH, backend="nvrtc")
    cc.compile(disk_req, cache_dir=cache_dir)
    disk = []
    for _ in range(200):
        cc.clear_memory_cache()
        t0 = time.perf_counter()
        r = cc.compile(disk_req, cache_dir=cache_dir)
        disk.append(time.perf_counter() - t0)
        assert r.hit == "disk", r.hit
    disk_ms = statistics.median(disk) * 1e3

    # Memory hit: the C++ cache probe with a prepared request (what generated kernels hold), and
    # the whole Python compile() call for the same source.
    mem_req = cc.CompileRequest(fresh_source(), arch=ARCH, backend="nvrtc")
    cc.compile(mem_req, cache_dir=cache_dir)
    assert cc.compile(mem_req).hit == "memory"
    memory_us = per_call(lambda: cc.compile(mem_req), 20000, 5) * 1e6
    py_src = fresh_source()
    compiler.compile(py_src, arch=ARCH, no_extern_c=True, cache_dir=cache_dir)
    python_memory_us = (
        per_call(
            lambda: compiler.compile(py_src, arch=ARCH, no_extern_c=True, cache_dir=cache_dir),
            5000,
            5,
        )
        * 1e6
    )

    # nvcc, cold and from the disk cache.
    try:
        cuplug_cold("nvcc")
        nvcc_cold_ms = (
            statistics.median(seconds(lambda: cuplug_cold("nvcc"), args.nvcc_repeats)) * 1e3
        )
        nvcc_req = cc.CompileRequest(fresh_source(), arch=ARCH, backend="nvcc")
        cc.compile(nvcc_req, cache_dir=cache_dir)
        nvcc_disk = []
        for _ in range(100):
            cc.clear_memory_cache()
            t0 = time.perf_counter()
            cc.compile(nvcc_req, cache_dir=cache_dir)
            nvcc_disk.append(time.perf_counter() - t0)
        nvcc_disk_ms = statistics.median(nvcc_disk) * 1e3
        cc.compile(nvcc_req)
        nvcc_memory_us = per_call(lambda: cc.compile(nvcc_req), 20000, 5) * 1e6
    except Exception as e:  # nvcc missing is reported, not fatal
        print(f"{SCRIPT}: nvcc not measured: {e}")
        nvcc_cold_ms = nvcc_disk_ms = nvcc_memory_us = float("nan")

    ratio = cold_ms / raw_ms
    print(
        f"{SCRIPT}: {ARCH} cubin, medians; goals: cold <= 1.2 x raw, disk <= 0.5 ms, memory <= 1 us"
    )
    print(f"{SCRIPT}: raw NVRTC (ctypes)        {raw_ms:9.2f} ms")
    print(
        f"{SCRIPT}: cuplug nvrtc cold         {cold_ms:9.2f} ms   ratio {ratio:.3f} x raw "
        f"({'met' if ratio <= 1.2 else 'MISSED'})"
    )
    print(
        f"{SCRIPT}: cuplug disk-cache hit     {disk_ms:9.3f} ms   "
        f"({'met' if disk_ms <= 0.5 else 'MISSED'})"
    )
    print(
        f"{SCRIPT}: cuplug in-memory hit      {memory_us:9.3f} us   "
        f"({'met' if memory_us <= 1.0 else 'MISSED'}; prepared request, C++ probe)"
    )
    print(f"{SCRIPT}: compiler.compile() memory {python_memory_us:9.3f} us   (whole Python call)")
    print(f"{SCRIPT}: nvcc cold                 {nvcc_cold_ms:9.2f} ms")
    print(f"{SCRIPT}: nvcc disk-cache hit       {nvcc_disk_ms:9.3f} ms")
    print(f"{SCRIPT}: nvcc in-memory hit        {nvcc_memory_us:9.3f} us")
    write_json(
        args.json_out,
        {
            "raw_nvrtc_ms": raw_ms,
            "nvrtc_cold_ms": cold_ms,
            "cold_ratio": ratio,
            "disk_hit_ms": disk_ms,
            "memory_hit_us": memory_us,
            "python_compile_memory_hit_us": python_memory_us,
            "nvcc_cold_ms": nvcc_cold_ms,
            "nvcc_disk_hit_ms": nvcc_disk_ms,
            "nvcc_memory_hit_us": nvcc_memory_us,
        },
    )
    cc.clear_disk_cache(cache_dir)


if __name__ == "__main__":
    main()
