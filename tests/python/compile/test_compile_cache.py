"""The compile cache through Python: hits and misses, the environment, corruption, permissions,
eight processes compiling one new kernel at once, key completeness, and no stale hit however a
header is reached (computed includes, -include, -isystem, continued lines, shadowing, nvcc's
environment), in this process and in another. No GPU needed."""

import os
import stat
import subprocess
import sys
import time
import uuid
import warnings

import pytest

import cuplug.driver as drv
from cuplug import compiler
from cuplug._core import _compiler as _cc

SUBDIR = _cc.entries_subdir()
KERNEL = "__global__ void k(float *a) { a[threadIdx.x] *= 2.0f; }\n"


def new_kernel():
    return f"// {uuid.uuid4()}\n{KERNEL}"


def request(source, **kw):
    kw.setdefault("arch", "sm_90")
    return _cc.CompileRequest(source, **kw)


def entries(root):
    d = root / SUBDIR
    return sorted(d.iterdir()) if d.exists() else []


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for var in (
        "CUPLUG_DISABLE_CACHE",
        "PYCUDA_DISABLE_CACHE",
        "PYCUDA_CACHE_DIR",
        "CUPLUG_CACHE_MAX_SIZE",
    ):
        monkeypatch.delenv(var, raising=False)


def test_memory_then_disk_then_compile(tmp_path):
    source = new_kernel()
    r = request(source)
    first = _cc.compile(r, cache_dir=str(tmp_path))
    assert first.hit is None and first.data[:4] == b"\x7fELF"
    assert len(first.key) == 64 and len(r.key()) == 64
    second = _cc.compile(r, cache_dir=str(tmp_path))
    assert second.hit == "memory" and second.data == first.data
    # A request made again from the same values finds the same entry.
    assert _cc.compile(request(source), cache_dir=str(tmp_path)).hit == "memory"
    _cc.clear_memory_cache()
    third = _cc.compile(r, cache_dir=str(tmp_path))
    assert third.hit == "disk" and third.data == first.data
    assert third.key == first.key
    files = entries(tmp_path)
    assert [f.name for f in files] == [r.key() + ".bin"]  # named by the request key
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / SUBDIR).stat().st_mode) == 0o700


def test_cuplug_cache_dir_and_pycuda_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("CUPLUG_CACHE_DIR", str(tmp_path / "env"))
    compiler.compile(new_kernel(), arch="sm_90")
    assert len(entries(tmp_path / "env")) == 1
    # cache_dir= wins; cache_dir=False keeps results off disk.
    compiler.compile(new_kernel(), arch="sm_90", cache_dir=str(tmp_path / "arg"))
    assert len(entries(tmp_path / "arg")) == 1
    compiler.compile(new_kernel(), arch="sm_90", cache_dir=False)
    assert len(entries(tmp_path / "env")) == 1
    # PyCUDA's variables: its cache dir when ours is unset, and its switch.
    monkeypatch.delenv("CUPLUG_CACHE_DIR")
    monkeypatch.setenv("PYCUDA_CACHE_DIR", str(tmp_path / "pycuda"))
    compiler.compile(new_kernel(), arch="sm_90")
    assert len(entries(tmp_path / "pycuda")) == 1
    monkeypatch.setenv("PYCUDA_DISABLE_CACHE", "1")
    compiler.compile(new_kernel(), arch="sm_90")
    assert len(entries(tmp_path / "pycuda")) == 1


def test_disable_cache_turns_both_layers_off(tmp_path, monkeypatch):
    monkeypatch.setenv("CUPLUG_DISABLE_CACHE", "1")
    r = request(new_kernel())
    assert _cc.compile(r, cache_dir=str(tmp_path)).hit is None
    assert _cc.compile(r, cache_dir=str(tmp_path)).hit is None
    assert entries(tmp_path) == []
    monkeypatch.setenv("CUPLUG_DISABLE_CACHE", "0")
    _cc.compile(r, cache_dir=str(tmp_path))
    assert _cc.compile(r, cache_dir=str(tmp_path)).hit == "memory"


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(tmp_path, damage):
    r = request(new_kernel())
    first = _cc.compile(r, cache_dir=str(tmp_path))
    entry = entries(tmp_path)[0]
    good = entry.read_bytes()
    bad = {
        "truncate": good[: len(good) // 2],
        "flip": good[:100] + bytes([good[100] ^ 1]) + good[101:],
        "empty": b"",
        "garbage": os.urandom(len(good)),
    }[damage]
    entry.write_bytes(bad)
    _cc.clear_memory_cache()
    again = _cc.compile(r, cache_dir=str(tmp_path))
    assert again.hit is None and again.data == first.data
    assert entry.read_bytes() == good
    _cc.clear_memory_cache()
    assert _cc.compile(r, cache_dir=str(tmp_path)).hit == "disk"


def test_a_directory_others_can_write_is_not_used(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.warns(UserWarning, match="writable by everyone") as record:
        compiler.compile(new_kernel(), arch="sm_90", cache_dir=str(shared))
    assert len(record) == 1 and "CUPLUG_CACHE_DIR" in str(record[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiler.compile(new_kernel(), arch="sm_90", cache_dir=str(shared))  # said once
    assert entries(shared) == []
    assert _cc.cache_status(str(shared))[0] == "unsafe"
    group = tmp_path / "group"
    group.mkdir()
    group.chmod(0o770)
    assert _cc.cache_status(str(group))[0] == "unsafe"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a directory owned by another")
def test_a_directory_owned_by_someone_else_is_not_used(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    os.chown(foreign, 4242, 4242)
    state, root, reason = _cc.cache_status(str(foreign))
    assert state == "unsafe" and "owned by uid 4242" in reason


CONCURRENT = """
import sys
from cuplug._core import _compiler as cc
r = cc.CompileRequest(sys.stdin.read(), arch="sm_90")
res = cc.compile(r, cache_dir=sys.argv[1])
print(r.key(), res.hit)
"""


def test_eight_processes_compiling_one_new_kernel(tmp_path):
    source = new_kernel()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    outs = [p.communicate(source, timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    keys = {o[0].split()[0] for o in outs}
    assert len(keys) == 1
    key = keys.pop()
    files = entries(tmp_path)
    assert [f.name for f in files] == [key + ".bin"]  # one entry, no temp files left
    _cc.clear_memory_cache()
    res = _cc.compile(request(source), cache_dir=str(tmp_path))
    assert res.hit == "disk" and request(source).key() == key


def test_keys_are_the_same_in_another_process(tmp_path):
    (tmp_path / "h.h").write_text("#define V 1\n")
    source = '#include "h.h"\n' + KERNEL
    here = request(source, include_dirs=[str(tmp_path)]).key()
    code = (
        "import sys; from cuplug._core import _compiler as cc; "
        "print(cc.CompileRequest(sys.argv[1], arch='sm_90', include_dirs=[sys.argv[2]]).key())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, source, str(tmp_path)], capture_output=True, text=True
    )
    assert out.stdout.strip() == here, out.stderr


def test_every_ingredient_changes_the_key(tmp_path):
    base = dict(
        source='#include "h.h"\n' + KERNEL,
        options=["-DA=1"],
        include_dirs=[str(tmp_path)],
        arch="sm_90",
        target="cubin",
        name_expressions=["k"],
        backend="nvrtc",
    )
    k0 = _cc.CompileRequest(**base).key()
    variants = {
        "source": dict(source=base["source"] + " "),
        "options": dict(options=["-DA=2"]),
        "arch": dict(arch="sm_89"),
        "code": dict(code="sm_90"),
        "target": dict(target="ptx"),
        "name expressions": dict(name_expressions=["k", "j"]),
        "relocatable": dict(relocatable=True),
        "debug": dict(debug=True),
        "program": dict(program="/opt/cuda/bin/nvcc"),
        "backend": dict(backend="nvcc"),
        # Where headers are looked for decides which are read.
        "include dirs": dict(include_dirs=[str(tmp_path / "moved")]),
    }
    for what, change in variants.items():
        try:
            key = _cc.CompileRequest(**{**base, **change}).key()
        except drv.ConfigError as e:
            # The nvcc backend's key holds its version: without an nvcc for this toolkit (NVIDIA's
            # CUDA 12 wheels bring none) there is no such key to tell apart.
            if change.get("backend") == "nvcc" and "nvcc not found" in str(e):
                continue
            raise
        assert key != k0, what


def old_file(path, text):
    """Writes a file that looks written long ago: the cache does not record a file written just
    before a compile (file times lag the clock), and these tests want their compiles cached."""
    path.write_text(text)
    past = time.time() - 30
    os.utime(path, (past, past))


def ptx_value(ptx):
    """The int constant a kernel `a[0] = V;` stores, from its PTX."""
    import re

    m = re.search(rb"st\.global\.u32\s+\[%rd\d+\], (\d+);", ptx) or re.search(
        rb"mov\.u32\s+%r\d+, (\d+);", ptx
    )
    assert m, ptx.decode(errors="replace")
    return int(m.group(1))


STORE_V = 'extern "C" __global__ void k(int *a) { a[0] = V; }\n'

# How a header is reached: (source prefix, options, backends it applies to). The header's dir is
# an include dir unless the options name it. Each must give a fresh compile (never a stale hit)
# after the header is edited.
REACHED = {
    "computed include": ('#define H "h.cuh"\n#include H\n', [], ["nvrtc", "nvcc"]),
    "computed include via -D": ("#include H\n", ['-DH="h.cuh"'], ["nvrtc", "nvcc"]),
    "continued include line": ('#include \\\n  "h.cuh"\n', [], ["nvrtc", "nvcc"]),
    "-include": ("", ["-include", "{dir}/h.cuh"], ["nvrtc", "nvcc"]),
    "--pre-include": ("", ["--pre-include={dir}/h.cuh"], ["nvrtc", "nvcc"]),
    "-isystem": ("#include <h.cuh>\n", ["-isystem", "{dir}"], ["nvcc", "nvrtc"]),
    "include through a header": ('#include "outer.cuh"\n', [], ["nvrtc", "nvcc"]),
}

STALE_CHECK = """
import sys, json
from cuplug._core import _compiler as cc
a = json.loads(sys.argv[1])
r = cc.CompileRequest(a["source"], options=a["options"], include_dirs=a["dirs"], arch="sm_90",
                      target="ptx", backend=a["backend"])
res = cc.compile(r, cache_dir=a["cache"])
sys.stdout.buffer.write(res.data)
"""


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("how", list(REACHED))
def test_an_edited_header_is_never_a_stale_hit(tmp_path, how, backend):
    prefix, options, backends = REACHED[how]
    if backend not in backends:
        pytest.skip(f"{how} is an option of {backends[0]} only")
    inc = tmp_path / "inc"
    inc.mkdir()
    old_file(inc / "h.cuh", "#define V 1\n")
    old_file(inc / "outer.cuh", '#define H2 "h.cuh"\n#include H2\n')
    source = f"// {uuid.uuid4()}\n" + prefix + STORE_V
    dirs = [] if any("{dir}" in o for o in options) else [str(inc)]
    options = [o.format(dir=inc) for o in options]
    cache = str(tmp_path / "cache")

    def compile_here():
        r = request(source, options=options, include_dirs=dirs, target="ptx", backend=backend)
        return _cc.compile(r, cache_dir=cache)

    first = compile_here()
    assert ptx_value(first.data) == 1
    assert first.not_cached is None, first.not_cached
    assert compile_here().hit == "memory"
    old_file(inc / "h.cuh", "#define V 2\n")
    again = compile_here()  # the memory layer
    assert again.hit is None and ptx_value(again.data) == 2
    old_file(inc / "h.cuh", "#define V 3\n")
    args = dict(source=source, options=options, dirs=dirs, backend=backend, cache=cache)
    out = subprocess.run(
        [sys.executable, "-c", STALE_CHECK, __import__("json").dumps(args)],
        capture_output=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr.decode()
    assert ptx_value(out.stdout) == 3  # the disk layer, from another process


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
def test_a_header_created_earlier_on_the_include_path_is_noticed(tmp_path, backend):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    old_file(second / "h.cuh", "#define V 1\n")
    source = f"// {uuid.uuid4()}\n#include <h.cuh>\n" + STORE_V
    r = request(source, include_dirs=[str(first), str(second)], target="ptx", backend=backend)
    assert ptx_value(_cc.compile(r, cache_dir=str(tmp_path)).data) == 1
    assert _cc.compile(r, cache_dir=str(tmp_path)).hit == "memory"
    old_file(first / "h.cuh", "#define V 2\n")  # now found first
    assert ptx_value(_cc.compile(r, cache_dir=str(tmp_path)).data) == 2
    _cc.clear_memory_cache()
    assert ptx_value(_cc.compile(r, cache_dir=str(tmp_path)).data) == 2


@pytest.mark.parametrize("variable", ["NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS"])
def test_nvccs_flag_variables_are_part_of_the_key(tmp_path, monkeypatch, variable):
    source = f"// {uuid.uuid4()}\n" + STORE_V
    r = request(source, target="ptx", backend="nvcc")
    monkeypatch.setenv(variable, "-DV=1")
    assert ptx_value(_cc.compile(r, cache_dir=str(tmp_path)).data) == 1
    assert _cc.compile(r, cache_dir=str(tmp_path)).hit == "memory"
    monkeypatch.setenv(variable, "-DV=2")
    assert ptx_value(_cc.compile(r, cache_dir=str(tmp_path)).data) == 2
    _cc.clear_memory_cache()
    monkeypatch.setenv(variable, "-DV=3")
    assert ptx_value(_cc.compile(r, cache_dir=str(tmp_path)).data) == 3  # the disk entry: V=2
    _cc.clear_memory_cache()
    assert _cc.compile(r, cache_dir=str(tmp_path)).hit == "disk"


def test_a_relative_include_dir_means_the_current_directory(tmp_path, monkeypatch):
    for name, value in (("a", 1), ("b", 2)):
        (tmp_path / name / "inc").mkdir(parents=True)
        old_file(tmp_path / name / "inc" / "h.cuh", f"#define V {value}\n")
    source = f"// {uuid.uuid4()}\n#include <h.cuh>\n" + STORE_V
    for backend in ("nvrtc", "nvcc"):
        r = request(source, include_dirs=["inc"], target="ptx", backend=backend)
        monkeypatch.chdir(tmp_path / "a")
        assert ptx_value(_cc.compile(r, cache_dir=str(tmp_path)).data) == 1
        monkeypatch.chdir(tmp_path / "b")
        assert ptx_value(_cc.compile(r, cache_dir=str(tmp_path)).data) == 2, backend


def test_what_nvrtc_cannot_follow_is_compiled_every_time(tmp_path):
    old_file(tmp_path / "h.cuh", "#define V 1\n")
    source = f"// {uuid.uuid4()}\n#define S(x) #x\n#include S(h.cuh)\n" + STORE_V
    r = request(source, include_dirs=[str(tmp_path)], target="ptx", backend="nvrtc")
    first = _cc.compile(r, cache_dir=str(tmp_path / "cache"))
    assert ptx_value(first.data) == 1
    assert "S(h.cuh)" in first.not_cached
    old_file(tmp_path / "h.cuh", "#define V 2\n")
    second = _cc.compile(r, cache_dir=str(tmp_path / "cache"))
    assert second.hit is None and ptx_value(second.data) == 2
    assert entries(tmp_path / "cache") == []


def test_an_edited_header_is_noticed_in_the_same_process(tmp_path):
    (tmp_path / "v.h").write_text("#define V 1.5f\n")
    source = '#include "v.h"\n__global__ void k(float *a) { a[0] = V; }\n' + f"// {uuid.uuid4()}\n"
    ptx = compiler.compile(source, arch="sm_90", target="ptx", include_dirs=[tmp_path])
    assert b"0f3FC00000" in ptx or b"1069547520" in ptx  # 1.5f
    time.sleep(0.01)
    (tmp_path / "v.h").write_text("#define V 2.5f\n")
    ptx = compiler.compile(source, arch="sm_90", target="ptx", include_dirs=[tmp_path])
    assert b"0f40200000" in ptx or b"1075838976" in ptx  # 2.5f


HANG_CHECK = """
import sys, time
from cuplug._core import _compiler as cc
r = cc.CompileRequest("__global__ void k() {}", arch="sm_90")
start = time.monotonic()
res = cc.compile(r, cache_dir=sys.argv[1])
print(res.hit, round(time.monotonic() - start, 3))
"""


@pytest.mark.parametrize("planted", ["fifo", "sparse 1 TiB"])
def test_a_hostile_entry_is_a_quick_miss(tmp_path, planted):
    r = request("__global__ void k() {}")
    _cc.compile(r, memory=False, cache_dir=str(tmp_path))
    entry = tmp_path / SUBDIR / (r.key() + ".bin")
    good = entry.read_bytes()
    entry.unlink()
    if planted == "fifo":
        os.mkfifo(entry, 0o600)
    else:
        with open(entry, "wb") as f:
            f.truncate(1 << 40)
        os.chmod(entry, 0o600)
    try:
        out = subprocess.run(
            [sys.executable, "-c", HANG_CHECK, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        if planted == "fifo":  # let the stuck reader go before failing
            os.close(os.open(entry, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"a {planted} entry hangs the compile")
    assert out.returncode == 0, out.stderr
    hit, seconds = out.stdout.split()
    assert hit == "None" and float(seconds) < 10
    assert entry.read_bytes() == good  # replaced by a real entry


def test_size_cap_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CUPLUG_CACHE_MAX_SIZE", "64MiB")
    assert _cc.max_disk_bytes() == 64 << 20
    monkeypatch.setenv("CUPLUG_CACHE_MAX_SIZE", "a lot")
    with pytest.raises(drv.ConfigError, match="CUPLUG_CACHE_MAX_SIZE"):
        _cc.max_disk_bytes()
    # A cap smaller than two entries keeps only the newest.
    monkeypatch.delenv("CUPLUG_CACHE_MAX_SIZE")
    _cc.compile(request(new_kernel()), cache_dir=str(tmp_path))
    size = entries(tmp_path)[0].stat().st_size
    monkeypatch.setenv("CUPLUG_CACHE_MAX_SIZE", str(int(size * 1.5)))
    newest = request(new_kernel())
    _cc.compile(newest, cache_dir=str(tmp_path))
    assert [f.name for f in entries(tmp_path)] == [newest.key() + ".bin"]


def test_a_memory_hit_is_cheap():
    r = request(new_kernel())
    _cc.compile(r)
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        _cc.compile(r)
    per_hit = (time.perf_counter() - start) / n
    assert per_hit < 20e-6, f"{per_hit * 1e6:.2f} us per in-memory hit"


def test_clear_disk_cache(tmp_path):
    _cc.compile(request(new_kernel()), cache_dir=str(tmp_path))
    assert _cc.clear_disk_cache(str(tmp_path)) == 1
    assert entries(tmp_path) == []
