"""cuplug's one CUDA toolkit search order at run time (core/src/toolkit.cpp,
cuplug._compile.toolkit):
$CUDAToolkit_ROOT, $CUDA_PATH, $CUDA_HOME, $CUDA_ROOT, NVIDIA's pip wheels, nvcc on PATH,
/usr/local/cuda, the build's toolkit; the libraries plugins link are loaded from the first folder
that has them, and nvcc and the DynamicModule's static libraries are found in the same order."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from cuplug import _core
from cuplug._compile import toolkit as _toolkit

TOOLKIT_VARS = ("CUDAToolkit_ROOT", "CUDA_PATH", "CUDA_HOME", "CUDA_ROOT", "CUPLUG_TOOLKIT_WHEELS")


def run(code, env=None, path=None):
    """Runs `code` in a fresh Python with cuplug importable and the toolkit variables unset;
    returns what it printed, parsed as JSON."""
    full = {k: v for k, v in os.environ.items() if k not in TOOLKIT_VARS}
    full["PYTHONPATH"] = os.pathsep.join(
        p for p in [*(env or {}).pop("PYTHONPATH", "").split(os.pathsep), *sys.path] if p
    )
    full.update(env or {})
    if path is not None:
        full["PATH"] = path
    proc = subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


ROOTS = "import json, cuplug; print(json.dumps(cuplug._core.backends.toolkit_roots()))"


def toolkit(root):
    (root / "include").mkdir(parents=True)
    (root / "include" / "cuda.h").write_text("#define CUDA_VERSION 13000\n")
    (root / "bin").mkdir()
    return root


def test_variables_then_wheels_then_nvcc_on_path_then_the_default(tmp_path):
    a, b, c, d = (toolkit(tmp_path / n) for n in "abcd")
    site = tmp_path / "site"
    wheel = toolkit(site / "nvidia" / "cu13")
    onpath = toolkit(tmp_path / "onpath")
    nvcc = onpath / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    env = {
        "CUDA_ROOT": str(d),
        "CUDA_HOME": str(c),
        "CUDA_PATH": str(b),
        "CUDAToolkit_ROOT": str(a),
        "PYTHONPATH": str(site),
    }
    path = f"{onpath / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    roots = run(ROOTS, env=env, path=path)
    assert roots[:5] == [
        [str(a), "$CUDAToolkit_ROOT"],
        [str(b), "$CUDA_PATH"],
        [str(c), "$CUDA_HOME"],
        [str(d), "$CUDA_ROOT"],
        [str(wheel), "pip wheel"],
    ]
    # The interpreter's own site-packages may hold a toolkit wheel too (nvidia/cu13 next to
    # PyTorch): it comes after PYTHONPATH's.
    i = 5
    while roots[i][1] == "pip wheel":
        i += 1
    assert roots[i] == [str(onpath), "nvcc on PATH"]
    rest = [origin for _, origin in roots[i + 1 :]]
    assert set(rest) <= {"default", "build"}


def test_missing_folders_are_left_out_and_each_folder_comes_once(tmp_path):
    a = toolkit(tmp_path / "a")
    env = {"CUDA_PATH": str(a), "CUDA_HOME": str(a), "CUDA_ROOT": str(tmp_path / "missing")}
    roots = run(ROOTS, env=env, path="/usr/bin:/bin")
    assert [r for r in roots if r[0] == str(a)] == [[str(a), "$CUDA_PATH"]]
    assert str(tmp_path / "missing") not in [r[0] for r in roots]


def test_wheel_roots_never_look_in_the_current_directory(tmp_path, monkeypatch):
    toolkit(tmp_path / "nvidia" / "cu13")
    monkeypatch.chdir(tmp_path)
    assert _toolkit.wheel_roots(["", ".", "nvidia"]) == []
    assert _toolkit.wheel_roots([str(tmp_path)]) == [str(tmp_path / "nvidia" / "cu13")]


def test_include_and_library_folders_of_a_root(tmp_path):
    root = tmp_path / "cuda"
    (root / "targets" / "x86_64-linux" / "include").mkdir(parents=True)
    (root / "targets" / "x86_64-linux" / "include" / "cuda.h").write_text("\n")
    (root / "lib64").mkdir()
    (root / "targets" / "x86_64-linux" / "lib").mkdir()
    assert _core.backends.toolkit_include_dir(str(root)) == str(
        root / "targets" / "x86_64-linux" / "include"
    )
    assert _core.backends.toolkit_include_dir(str(tmp_path)) == ""
    assert _core.backends.toolkit_library_dirs(str(root)) == [
        str(root / "lib64"),
        str(root / "targets" / "x86_64-linux" / "lib"),
    ]


def test_nvcc_of_the_python_tools_is_the_first_in_the_order(tmp_path):
    first = toolkit(tmp_path / "first")
    nvcc = first / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 99.9, V99.9.1'\n")
    nvcc.chmod(0o755)
    code = (
        "import json; from cuplug._compile import nvcc as _nvcc; "
        "print(json.dumps([_nvcc._find_nvcc('nvcc'), _nvcc.get_nvcc_version('nvcc')]))"
    )
    found, version = run(code, env={"CUDA_PATH": str(first)})
    assert found == str(nvcc) and "release 99.9" in version


def test_dynamic_modules_find_static_libraries_in_the_order(tmp_path):
    root = toolkit(tmp_path / "cuda")
    (root / "lib64").mkdir()
    code = (
        "import json; from cuplug._compile import toolkit; "
        "print(json.dumps(toolkit.library_dirs()))"
    )
    dirs = run(code, env={"CUDA_PATH": str(root)})
    assert dirs[0] == str(root / "lib64")


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to make a stand-in library")
def test_a_toolkit_library_comes_from_the_first_folder_that_has_it(tmp_path):
    wanted = [line.split(":")[0] for line in _core.backends.preload_toolkit_libraries()]
    soname = next((s for s in wanted if s.startswith("libnvrtc.so.")), None)
    if soname is None:
        pytest.skip("this build's plugins link no NVRTC")
    root = toolkit(tmp_path / "cuda")
    (root / "lib64").mkdir()
    lib = root / "lib64" / soname
    src = tmp_path / "stand_in.c"
    src.write_text("int cuplug_stand_in(void) { return 1; }\n")
    # NVRTC opens its builtins library by name: it must come from the same folder.
    builtins = root / "lib64" / (soname.replace("libnvrtc.so.", "libnvrtc-builtins.so.") + ".0")
    for out in (lib, builtins):
        cmd = ["g++", "-x", "c", "-shared", "-fPIC", f"-Wl,-soname,{out.name}", "-o", str(out)]
        subprocess.run([*cmd, str(src)], check=True)
    code = (
        "import json, cuplug; from cuplug import _core, compiler\n"
        "lines = list(_core.backends.preload_toolkit_libraries())\n"
        "try:\n"
        "    compiler.compile('__global__ void k() {}', target='ptx', arch='compute_90')\n"
        "    error = None\n"
        "except Exception as e:\n"
        "    error = str(e)\n"
        "print(json.dumps([lines, error]))"
    )
    lines, error = run(code, env={"CUDA_PATH": str(root)})
    assert f"{soname}: {lib} ($CUDA_PATH) + {builtins.name}" in lines
    # The nvrtc plugin opens libnvrtc by its soname and gets that stand-in, which has none of
    # NVRTC's functions: proof that the dynamic loader's own choice (the system toolkit) was not
    # taken.
    assert error is not None and "nvrtc: the opened libnvrtc has no nvrtcVersion" in error


def test_info_shows_the_toolkit_folders_and_libraries():
    code = (
        "import json; from cuplug import __main__ as m; print(json.dumps(m.collect()['toolkit']))"
    )
    report = run(code, env={"CUDA_PATH": "/nonexistent"})
    assert isinstance(report["roots"], list) and isinstance(report["libraries"], list)
    assert all(origin for _, origin in report["roots"])
    assert pathlib.Path("/nonexistent").as_posix() not in [r for r, _ in report["roots"]]


SPACED = '{\n  "cuda" :\n  {\n    "name" : "CUDA SDK",\n    "version" : "12.9.1"\n  }}'


@pytest.mark.parametrize(
    ("layout", "major"),
    [
        ({"version.json": '{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}'}, 13),
        ({"version.json": SPACED}, 12),
        # "version" outside the "cuda" object, or no number before a dot: not a CUDA version.
        ({"version.json": '{"cuda": {"name": "CUDA SDK"}, "nvcc": {"version": "13.0.1"}}'}, 0),
        ({"version.json": '{"cuda": {"version": "thirteen"}}'}, 0),
        ({"version.json": '{"cuda": {"version": "13'}, 0),
        ({"version.json": "not json at all " * 1000}, 0),
        ({"lib64/libcudart.so.12": ""}, 12),
        ({"lib/libnvrtc.so.13": ""}, 13),
        ({"lib/libnvrtc.so.13.0": "", "lib/libnvrtc.so.x": ""}, 0),
        ({"nvidia/cu13/include/cuda.h": ""}, 13),
        ({"nvidia/curand/lib/libcurand.so.10": ""}, 12),
        ({"nvidia/cuda_cccl/include/cuda/std/version": ""}, 12),
        ({"nvidia/cuX/include/cuda.h": ""}, 12),
        ({"other/cu13/include/cuda.h": ""}, 0),
    ],
)
def test_the_cuda_major_version_a_folder_holds(tmp_path, layout, major):
    # What decides which folders a CUDA 12 driver may use (cuplug/toolkit.hpp): version.json,
    # then the libraries' sonames, then NVIDIA's wheel folder names.
    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    first = next(iter(layout)).split("/")
    root = (
        tmp_path / "/".join(first[:2]) if first[0] == "nvidia" or first[0] == "other" else tmp_path
    )
    assert _core.backends.toolkit_cuda_major(str(root)) == major
    assert _core.backends.toolkit_cuda_major(str(root) + "/") == major
