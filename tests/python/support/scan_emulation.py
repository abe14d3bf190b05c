"""Runs generated scan kernels on the CPU (cuda_emulation.hpp: a thread per CUDA thread, blocks
concurrent), so that CI checks what they compute - the tile scan, the look-back across tiles
and groups, determinism under random timing - without a GPU. The kernel source is compiled by
the host C++ compiler after three rewrites: ``__shared__`` declarations become per-block
memory, and the inline-PTX memory primitives are replaced by std::atomic_ref ones."""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")

_REPLACED = (
    "cuplug_ld_acquire",
    "cuplug_st_release",
    "cuplug_ld_cg",
    "cuplug_st_cg",
    "cuplug_store_piece",
)

_SHARED = re.compile(
    r"__shared__\s+(?:alignas\([^)]*\)\s+)?(?P<type>[\w ]+?)\s+(?P<name>\w+)(?P<dims>\[[^\]]*\])?;"
)


def _shared(m):
    t, name, dims = m.group("type"), m.group("name"), m.group("dims")
    key = "__COUNTER__"
    if dims:
        return (
            f"{t} (&{name}){dims} = *reinterpret_cast<{t} (*){dims}>("
            f"emu_shared_mem({key}, sizeof({t}{dims})));"
        )
    return f"{t} &{name} = *reinterpret_cast<{t} *>(emu_shared_mem({key}, sizeof({t})));"


def host_source(source):
    """The kernel source as host C++ for cuda_emulation.hpp."""
    lines = source.split("\n")
    out, skipping = [], False
    for line in lines:
        if not skipping and any(
            line.startswith("__device__") and f" {name}(" in line for name in _REPLACED
        ):
            skipping = True
            name = next(n for n in _REPLACED if f" {n}(" in line)
            if name == "cuplug_store_piece":
                out.append(
                    "inline void cuplug_store_piece(cuplug_out_vec *p, const cuplug_out_vec &o)"
                    " { *p = o; }"
                )
            continue
        if skipping:
            if line == "}":
                skipping = False
            continue
        out.append(line)
    text = "\n".join(out)
    return _SHARED.sub(_shared, text)


_MAIN = r"""
#include <cstdio>
#include <string>
int main(int argc, char **argv)
{{
  // in-file out-file n in-bytes out-bytes jitter scratch-bytes grid resident in-offset in-step
  // out-offset out-step row vec-ok slow-lo slow-hi slow-us
  auto arg = [&](int k) {{ return std::stoll(argv[k]); }};
  const unsigned long long n = arg(3);
  std::vector<unsigned char> in(arg(4)), out(arg(5));
  std::FILE *f = std::fopen(argv[1], "rb");
  if (std::fread(in.data(), 1, in.size(), f) != in.size()) return 2;
  std::fclose(f);
  emu_jitter_us = (int)arg(6);
  std::vector<unsigned long long> state(arg(7) / 8 + 2, 0);
  const unsigned grid = (unsigned)arg(8), resident = (unsigned)arg(9);
  const long long in_off = arg(10), in_step = arg(11), out_off = arg(12), out_step = arg(13);
  const unsigned long long row = arg(14);
  const int vec_ok = (int)arg(15);
  emu_slow_lo = reinterpret_cast<std::uintptr_t>(state.data()) + arg(16);
  emu_slow_hi = reinterpret_cast<std::uintptr_t>(state.data()) + arg(17);
  emu_slow_us = (int)arg(18);
  (void)row;
  emu_launch({kernel}, grid, {block}, resident, {args});
  f = std::fopen(argv[2], "wb");
  std::fwrite(out.data(), 1, out.size(), f);
  std::fclose(f);
  std::printf("releases %ld\n", emu_releases.load());
  return 0;
}}
"""


def _build(cpp, workdir):
    key = hashlib.sha256(cpp.encode()).hexdigest()[:16]
    exe = pathlib.Path(workdir) / f"scan_{key}"
    if not exe.exists():
        src = exe.with_suffix(".cpp")
        src.write_text(cpp)
        cmd = [CXX, "-std=c++20", "-O1", "-pthread", "-w", f"-I{HERE}", "-include",
               str(HERE / "cuda_emulation.hpp"), str(src), "-o", str(exe)]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    return exe


def _run(exe, data, workdir, params=()):
    inp = pathlib.Path(workdir) / f"in_{os.getpid()}.bin"
    outp = pathlib.Path(workdir) / f"out_{os.getpid()}.bin"
    inp.write_bytes(data)
    cmd = [str(exe), str(inp), str(outp)] + [str(int(p)) for p in params]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if r.returncode:
        raise RuntimeError(f"emulated kernel failed ({r.returncode}): {r.stdout}{r.stderr}")
    releases = int(r.stdout.split()[-1])
    return outp.read_bytes(), releases


def grid_for(n, tuning, multi=True):
    tiles = -(-n // tuning.tile)
    return (tiles if multi and tiles > 1 else 1), tiles


def _slow_group_prefixes(tiles, slow_us):
    """Format fields that delay every release store of a group prefix GP(g) by slow_us: later
    groups then find totals without prefixes and fold them (the look-back's slow path)."""
    groups = -(-tiles // 32)
    lo = 16 + 8 * (tiles + groups)
    return dict(slow_lo=lo, slow_hi=lo + 8 * groups if slow_us else lo, slow_us=slow_us)


def run_array_scan(gen, x, out_dtype, row=0, in_step=1, out_step=1, multi=True, jitter=0,
                   resident=6, slow_us=0, workdir=None):  # fmt: skip
    """Runs an ArrayScan (cuplug._codegen.scan) over host array ``x`` (read with ``in_step``)
    and returns (the n results, number of release stores). ``workdir`` keeps the built
    programs (one per kernel) for later calls."""
    from cuplug._codegen import scan as sg

    out_dtype = np.dtype(out_dtype)
    n = len(x) if in_step == 1 else -(-len(x) // abs(in_step))
    t = gen.tuning
    grid, tiles = grid_for(n, t, multi)
    in_off = 0 if in_step > 0 else (len(x) - 1)
    out_len = n * abs(out_step)
    out_off = 0 if out_step > 0 else out_len - 1
    args = [
        "reinterpret_cast<const in_type *>(in.data()) + in_off",
        "in_step",
        "reinterpret_cast<out_type *>(out.data()) + out_off",
        "out_step",
    ]
    if gen.segmented:
        args.append("row")
    args += ["vec_ok", "n", "reinterpret_cast<unsigned char *>(state.data())"]
    cpp = host_source(gen.source) + _MAIN.format(
        kernel=gen.name, block=t.block, args=", ".join(args)
    )
    vec_ok = int(gen.vector and in_step == 1 and out_step == 1)
    slow = _slow_group_prefixes(tiles, slow_us)
    params = [n, x.nbytes, out_len * out_dtype.itemsize, jitter]
    params += [sg.scratch_bytes(tiles, gen.words), grid, resident, in_off, in_step, out_off]
    params += [out_step, row, vec_ok, slow["slow_lo"], slow["slow_hi"], slow["slow_us"]]
    with tempfile.TemporaryDirectory() as tmp:
        exe = _build(cpp, workdir or tmp)
        raw, releases = _run(exe, np.ascontiguousarray(x).tobytes(), tmp, params)
    out = np.frombuffer(raw, out_dtype)
    return out[out_off::out_step] if out_step < 0 else out[::out_step], releases


_GENERIC_MAIN = r"""
#include <cstdio>
int main(int argc, char **argv)
{{
  const unsigned long long n = {n};
  std::vector<unsigned char> data({data_bytes});
  std::FILE *f = std::fopen(argv[1], "rb");
  if (std::fread(data.data(), 1, data.size(), f) != data.size()) return 2;
  std::fclose(f);
  emu_jitter_us = {jitter};
  std::vector<unsigned long long> state({scratch_bytes} / 8 + 2, 0);
  emu_slow_lo = reinterpret_cast<std::uintptr_t>(state.data()) + {slow_lo};
  emu_slow_hi = reinterpret_cast<std::uintptr_t>(state.data()) + {slow_hi};
  emu_slow_us = {slow_us};
  std::vector<scan_type> tmp(n);
  std::vector<unsigned char> flags(n);
  unsigned char *base = data.data();
  emu_launch({name}_scan, {grid}, {block}, {resident}, {args}tmp.data(), flags.data(), n,
             reinterpret_cast<unsigned char *>(state.data()));
  emu_launch({name}_output, 2, 256, 2, {args}const_cast<const scan_type *>(tmp.data()),
             const_cast<const unsigned char *>(flags.data()), n);
  f = std::fopen(argv[2], "wb");
  std::fwrite(data.data(), 1, data.size(), f);
  std::fclose(f);
  std::printf("releases %ld\n", emu_releases.load());
  return 0;
}}
"""


def run_generic_scan(gen, args, n, multi=True, jitter=0, resident=6, slow_us=0, workdir=None):
    """Runs a GenericScan (cuplug._codegen.scan) over ``args`` (host arrays for vectors, numbers
    for scalars, in order) for ``n`` elements; returns the arrays after the scan (copies)."""
    from cuplug import _dtypes
    from cuplug._codegen import scan as sg

    t = gen.tuning
    grid, tiles = grid_for(n, t, multi)
    offsets, blobs, pos, cargs = [], [], 0, []
    for a in args:
        if isinstance(a, np.ndarray):
            pos = -(-pos // 16) * 16
            offsets.append(pos)
            ct = _dtypes.ctype(a.dtype)
            cargs.append(f"reinterpret_cast<{ct} *>(base + {pos})")
            blobs.append((pos, np.ascontiguousarray(a).tobytes()))
            pos += a.nbytes
        else:
            offsets.append(None)
            cargs.append(repr(a))
    data = bytearray(max(pos, 1))
    for off, b in blobs:
        data[off : off + len(b)] = b
    cpp = host_source(gen.source) + _GENERIC_MAIN.format(
        n=n,
        data_bytes=len(data),
        jitter=jitter,
        scratch_bytes=sg.scratch_bytes(tiles, gen.words),
        name=gen.name,
        grid=grid,
        block=t.block,
        resident=resident,
        args="".join(a + ", " for a in cargs),
        **_slow_group_prefixes(tiles, slow_us),
    )
    with tempfile.TemporaryDirectory() as tmp:
        exe = _build(cpp, workdir or tmp)
        raw, _ = _run(exe, bytes(data), tmp)
    out = []
    for a, off in zip(args, offsets):
        if off is not None:
            out.append(np.frombuffer(raw[off : off + a.nbytes], a.dtype).copy())
    return out
