"""Plugins built by other compilers than cuplug's: what loads, what is refused, and the messages.

Each test builds tests/cpp/fake_plugins/good_allocator.cpp with another compiler or standard
library and loads it with <build>/tests/cuplug_plugin_probe (this build's core), which also checks
that the plugin's cuplug::out_of_memory is caught by the core as that type. A compiler that is not
installed skips its test with the Debian package to install (.ci/run installs them).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def build_info():
    """<build>/tests/foreign_plugins.txt (written by tests/cpp/core/CMakeLists.txt) as a dict."""
    build = os.environ.get("CUPLUG_BUILD_DIR")
    path = pathlib.Path(build or "", "tests", "foreign_plugins.txt")
    if not build or not path.exists():
        pytest.skip(f"{path} not generated (set CUPLUG_BUILD_DIR to a configured build folder)")
    info: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition("=")
        if value:
            info.setdefault(key, []).append(value)
    if not os.path.exists(info["probe"][0]):
        pytest.skip(f"{info['probe'][0]} not built (target cuplug_plugin_probe)")
    return info


def find_compiler(names, package):
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"{' / '.join(names)} not installed (Debian: apt-get install {package})")


def build_plugin(info, cxx, out, *flags, extra=()):
    """Builds good_allocator.cpp as the SDK does (hidden visibility, linked to the core)."""
    core = info["core"][0]
    cmd = [cxx, "-std=c++17", "-O1", "-fPIC", "-shared", "-fvisibility=hidden"]
    cmd += ["-fvisibility-inlines-hidden", *flags]
    cmd += [f"-I{d}" for d in info["include"]] + [f"-D{d}" for d in info.get("define", [])]
    cmd += [str(pathlib.Path(info["fake_plugins"][0], "good_allocator.cpp")), "-o", str(out)]
    cmd += [*extra, core, f"-Wl,-rpath,{os.path.dirname(core)}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr[-3000:]}"
    return out


def probe(info, plugin):
    proc = subprocess.run(
        [info["probe"][0], str(plugin)], capture_output=True, text=True, timeout=60
    )
    return proc.returncode, proc.stdout + proc.stderr


def compiler_version(cxx):
    return subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]


def assert_loads_and_exceptions_cross(info, cxx, plugin):
    rc, out = probe(info, plugin)
    assert rc == 0, f"plugin built by {compiler_version(cxx)}:\n{out}"
    assert "loaded: allocator 'fake_alloc'" in out
    assert "caught cuplug::out_of_memory (a cuplug::cuda_error, requested 4096)" in out, out


@pytest.mark.parametrize(
    "names, package",
    [
        (["g++-11"], "g++-11"),
        (["g++-13", "g++-14"], "g++-13 (not in Debian 12)"),
    ],
    ids=["gcc11", "gcc13+"],
)
def test_another_gcc_major_loads_and_its_exceptions_are_cuplug_types(tmp_path, names, package):
    info = build_info()
    cxx = find_compiler(names, package)
    plugin = build_plugin(info, cxx, tmp_path / "libgcc_other.so")
    rc, out = probe(info, plugin)
    if rc == 2 and "GLIBCXX_" in out:
        # A newer GCC than the running libstdc++ is refused at dlopen, with the version named.
        assert "was built by a newer GCC than the libstdc++ this process runs" in out, out
        return
    assert_loads_and_exceptions_cross(info, cxx, plugin)


def test_clang_against_libstdcxx_loads_and_its_exceptions_are_cuplug_types(tmp_path):
    info = build_info()
    names = ["clang++", *(f"clang++-{v}" for v in range(14, 21))]
    cxx = find_compiler(names, "clang-14")
    plugin = build_plugin(info, cxx, tmp_path / "libclang_libstdcxx.so", "-stdlib=libstdc++")
    assert_loads_and_exceptions_cross(info, cxx, plugin)


def test_libcxx_is_refused_naming_both_libraries_and_the_compiler_to_use(tmp_path):
    info = build_info()
    names = ["clang++", *(f"clang++-{v}" for v in range(14, 21))]
    cxx = find_compiler(names, "clang-14")
    check = subprocess.run(
        [cxx, "-stdlib=libc++", "-x", "c++", "-fsyntax-only", "-"],
        input="#include <string>\n",
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        pytest.skip(f"{cxx} -stdlib=libc++ has no headers (Debian: apt-get install libc++-dev)")
    plugin = build_plugin(info, cxx, tmp_path / "libclang_libcxx.so", "-stdlib=libc++")
    rc, out = probe(info, plugin)
    assert rc == 2, out
    assert "was built with ABI tag 'itanium/libc++-abi1/" in out
    assert "its standard library is LLVM libc++ (ABI version 1), cuplug's is libstdc++" in out
    assert "build it with g++ (any version from 5 on) or clang++ against libstdc++" in out
    assert "(built by GCC " in out or "(built by Clang " in out


def test_the_old_string_abi_is_refused_naming_the_macro(tmp_path):
    info = build_info()
    cxx = info["cxx"][0]
    plugin = build_plugin(info, cxx, tmp_path / "libold_abi.so", "-D_GLIBCXX_USE_CXX11_ABI=0")
    rc, out = probe(info, plugin)
    assert rc == 2, out
    assert "was built with ABI tag 'itanium/libstdc++-cxx11abi0/" in out
    assert "(_GLIBCXX_USE_CXX11_ABI=0), cuplug's is libstdc++ with the C++11" in out
    assert "without -D_GLIBCXX_USE_CXX11_ABI=0" in out


def test_a_plugin_needing_a_newer_libstdcxx_is_refused_naming_the_version(tmp_path):
    # What a plugin built by a newer GCC needs: a GLIBCXX_ version the running libstdc++ lacks.
    # A stub libstdc++.so.6 defining GLIBCXX_3.4.99 makes the plugin need it for real; at run
    # time the process's own libstdc++ is found, and dlopen refuses the plugin as it would.
    info = build_info()
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (cc) for the stub library")
    (tmp_path / "stub.c").write_text("void cuplug_test_needs_newer_libstdcxx(void) {}\n")
    (tmp_path / "stub.map").write_text(
        "GLIBCXX_3.4.99 { global: cuplug_test_needs_newer_libstdcxx; local: *; };\n"
    )
    stub = tmp_path / "stub" / "libstdc++.so.6"
    stub.parent.mkdir()
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            str(tmp_path / "stub.c"),
            f"-Wl,--version-script={tmp_path}/stub.map",
        ]
        + ["-Wl,-soname,libstdc++.so.6", "-o", str(stub)],
        check=True,
    )
    caller = tmp_path / "needs_newer.cpp"
    caller.write_text(
        'extern "C" void cuplug_test_needs_newer_libstdcxx();\n'
        "[[gnu::used]] static void (*keep)() = cuplug_test_needs_newer_libstdcxx;\n"
    )
    plugin = build_plugin(
        info, info["cxx"][0], tmp_path / "libneeds_newer.so", str(caller), extra=[str(stub)]
    )
    rc, out = probe(info, plugin)
    assert rc == 2, out
    assert "could not be loaded (unavailable)" in out
    assert "version `GLIBCXX_3.4.99' not found" in out
    assert (
        "built by a newer GCC than the libstdc++ this process runs (it needs GLIBCXX_3.4.99" in out
    )
    assert "the libstdc++ loaded here provides up to GLIBCXX_3.4." in out
    assert "Rebuild the plugin with GCC " in out or "Rebuild the plugin with Clang " in out
    assert "LD_LIBRARY_PATH" in out
