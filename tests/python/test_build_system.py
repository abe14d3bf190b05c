"""The build's search for its dependencies (cmake/cuplugBoost.cmake): Boost headers from the
boost-headers Python package before the system's. Runs CMake on small projects; needs no GPU."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CMAKE = shutil.which("cmake")
pytestmark = pytest.mark.skipif(CMAKE is None, reason="needs cmake")
TOOLKIT_VARS = ("CUDAToolkit_ROOT", "CUDA_PATH", "CUDA_HOME", "CUDA_ROOT")


def configure(source, build, *defines, env=None, path=None):
    """Runs a CMake configure; returns (exit status, stdout + stderr with its white space, which
    CMake breaks messages with, made single spaces)."""
    full = {k: v for k, v in os.environ.items() if k not in TOOLKIT_VARS and k != "PYTHONPATH"}
    full.update(env or {})
    if path is not None:
        full["PATH"] = path
    proc = subprocess.run(
        [CMAKE, "-S", str(source), "-B", str(build), *defines],
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def project(tmp_path, module, extra=""):
    """A project that includes one of cuplug's CMake modules and prints what it found."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(probe LANGUAGES NONE)\n"
        f'include("{ROOT}/cmake/{module}")\n{extra}'
    )
    return src


def fake_toolkit(root, version=13000):
    """A folder that looks like a toolkit to the build: include/cuda.h with CUDA_VERSION."""
    (root / "include").mkdir(parents=True)
    (root / "include" / "cuda.h").write_text(f"#define CUDA_VERSION {version}\n")
    return root


def path_without_nvcc():
    dirs = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(d for d in dirs if d and not os.path.exists(os.path.join(d, "nvcc")))


def fake_boost_package(tmp_path, version="1_85"):
    """A `boost_headers` Python package like PyPI's boost-headers: get_include() -> its headers."""
    pkg = tmp_path / "site" / "boost_headers"
    (pkg / "include" / "boost").mkdir(parents=True)
    (pkg / "include" / "boost" / "dll.hpp").write_text("// fake\n")
    (pkg / "include" / "boost" / "version.hpp").write_text(
        f'#define BOOST_LIB_VERSION "{version}"\n'
    )
    (pkg / "__init__.py").write_text(
        "import pathlib\ndef get_include():\n    return pathlib.Path(__file__).parent / 'include'\n"
    )
    return pkg


BOOST_PROBE = 'message(STATUS "boost: ${CUPLUG_BOOST_INCLUDE_DIR}")'


def test_boost_comes_from_the_boost_headers_package_of_the_building_python(tmp_path):
    pkg = fake_boost_package(tmp_path)
    src = project(tmp_path, "cuplugBoost.cmake", BOOST_PROBE)
    env = {"PYTHONPATH": str(pkg.parent)}
    rc, out = configure(src, tmp_path / "build", f"-DPython_EXECUTABLE={sys.executable}", env=env)
    assert rc == 0, out
    assert f"boost: {pkg / 'include'}" in out
    assert "Boost 1.85 headers" in out and "boost-headers Python package" in out
    # Not cached: pip's build environment holding it is gone after the build.
    assert str(pkg) not in (tmp_path / "build" / "CMakeCache.txt").read_text()


@pytest.mark.skipif(
    not pathlib.Path("/usr/include/boost/dll.hpp").exists(), reason="no system Boost headers"
)
def test_boost_falls_back_to_the_system_headers(tmp_path):
    src = project(tmp_path, "cuplugBoost.cmake", BOOST_PROBE)
    rc, out = configure(src, tmp_path / "build", f"-DPython_EXECUTABLE={sys.executable}")
    if "boost-headers Python package" in out:
        pytest.skip(f"{sys.executable} has the boost-headers package installed")
    assert rc == 0, out
    assert "boost: /usr/include" in out and "from the system" in out


def test_a_wrong_boost_folder_or_an_old_boost_is_refused(tmp_path):
    src = project(tmp_path, "cuplugBoost.cmake", BOOST_PROBE)
    rc, out = configure(src, tmp_path / "build", f"-DCUPLUG_BOOST_INCLUDE_DIR={tmp_path}")
    assert rc != 0 and "has no boost/dll.hpp" in out
    old = fake_boost_package(tmp_path, version="1_70")
    rc, out = configure(src, tmp_path / "b2", f"-DCUPLUG_BOOST_INCLUDE_DIR={old / 'include'}")
    assert rc != 0 and "Boost 1.70" in out and "older than 1.74" in out
