"""The build's search for its dependencies (cmake/cuplugCUDA.cmake, cmake/cuplugBoost.cmake): the
one toolkit search order, cuplug's own message when there is no toolkit, and Boost headers from the
boost-headers Python package before the system's. Runs CMake on small projects; needs no GPU."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
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


def test_a_missing_toolkit_stops_the_real_build_with_cuplugs_message(tmp_path):
    empty = tmp_path / "no-cuda"
    empty.mkdir()
    rc, out = configure(
        ROOT,
        tmp_path / "build",
        "-DCUPLUG_BUILD_TESTS=OFF",
        "-DCUPLUG_BUILD_PYTHON=OFF",
        "-DCUPLUG_BUILD_BENCHMARKS=OFF",
        f"-DCUPLUG_CUDA_DEFAULT_ROOTS={empty}",
        path=path_without_nvcc(),
    )
    assert rc != 0
    text = out
    assert "cuplug: no CUDA toolkit found" in text
    assert "cuda-toolkit-13-0" in text  # what to install
    assert "CUDA_PATH=" in text and "-DCUDAToolkit_ROOT=" in text  # what to set
    assert f"default={empty}" in text  # where it looked
    # Not CMake's FindCUDAToolkit, which asks for libraries cuplug does not use.
    assert "cudart" not in text.lower() and "cublas" not in text.lower()


def test_the_toolkit_needs_only_cuda_h_and_is_found_through_cuda_path_before_nvcc(tmp_path):
    toolkit = fake_toolkit(tmp_path / "toolkit", version=12080)
    src = project(
        tmp_path,
        "cuplugCUDA.cmake",
        'message(STATUS "found: ${CUDAToolkit_ROOT_DIR} ${CUDAToolkit_VERSION}")\n'
        'if(TARGET CUDA::nvrtc)\n  message(STATUS "nvrtc target")\nendif()\n',
    )
    rc, out = configure(src, tmp_path / "build", env={"CUDA_PATH": str(toolkit)})
    assert rc == 0, out
    assert f"found: {toolkit} 12.8" in out
    assert "no CUDA_nvrtc_LIBRARY" in out and "nvrtc target" not in out


def test_the_first_of_cudatoolkit_root_cuda_path_cuda_home_wins(tmp_path):
    first, second = fake_toolkit(tmp_path / "a"), fake_toolkit(tmp_path / "b")
    src = project(tmp_path, "cuplugCUDA.cmake", 'message(STATUS "found: ${CUDAToolkit_ROOT_DIR}")')
    env = {"CUDA_PATH": str(second), "CUDA_HOME": str(second)}
    rc, out = configure(src, tmp_path / "build", f"-DCUDAToolkit_ROOT={first}", env=env)
    assert rc == 0, out
    assert f"found: {first}" in out
    rc, out = configure(src, tmp_path / "build2", env={"CUDA_HOME": str(first), **env})
    assert rc == 0, out
    assert f"found: {second}" in out  # CUDA_PATH before CUDA_HOME


def test_a_named_folder_without_a_toolkit_is_reported_and_skipped(tmp_path):
    toolkit = fake_toolkit(tmp_path / "toolkit")
    src = project(tmp_path, "cuplugCUDA.cmake", 'message(STATUS "found: ${CUDAToolkit_ROOT_DIR}")')
    env = {"CUDA_PATH": str(tmp_path), "CUDA_HOME": str(toolkit)}
    rc, out = configure(src, tmp_path / "build", env=env)
    assert rc == 0, out
    assert "environment CUDA_PATH" in out and "holds no CUDA toolkit" in out
    assert f"found: {toolkit}" in out


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


def test_a_pip_wheel_toolkit_with_only_versioned_libraries_is_usable(tmp_path):
    # NVIDIA's wheels (site-packages/nvidia/cu13) have lib/libnvrtc.so.13 and no libnvrtc.so.
    toolkit = fake_toolkit(tmp_path / "nvidia" / "cu13")
    (toolkit / "lib").mkdir()
    for name in ("libnvrtc.so.13", "libnvrtc.alt.so.13", "libcurand.so.10"):
        (toolkit / "lib" / name).write_bytes(b"")
    src = project(
        tmp_path,
        "cuplugCUDA.cmake",
        'message(STATUS "nvrtc: ${CUDA_nvrtc_LIBRARY} curand: ${CUDA_curand_LIBRARY}")',
    )
    rc, out = configure(src, tmp_path / "build", env={"CUDA_PATH": str(toolkit)})
    assert rc == 0, out
    lib = toolkit / "lib"
    assert f"nvrtc: {lib / 'libnvrtc.so.13'} curand: {lib / 'libcurand.so.10'}" in out


def installed_config_project(tmp_path, site):
    """A project that includes cuplugBoost.cmake as a wheel's cuplugConfig.cmake does: with
    _cuplug_boost_site, the site-packages holding cuplug."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(probe LANGUAGES NONE)\n"
        f'set(_cuplug_boost_site "{site}")\n'
        f'include("{ROOT}/cmake/cuplugBoost.cmake")\n{BOOST_PROBE}\n'
    )
    return src


def test_an_installed_wheel_takes_the_boost_headers_beside_cuplug_first(tmp_path):
    # The sdk extra's package, in the site-packages of the installed cuplug; the Python asked
    # (this one) may have boost-headers of its own, which must not win.
    pkg = fake_boost_package(tmp_path, version="1_81")
    src = installed_config_project(tmp_path, pkg.parent)
    rc, out = configure(src, tmp_path / "build", f"-DPython_EXECUTABLE={sys.executable}")
    assert rc == 0, out
    assert f"boost: {pkg / 'include'}" in out
    asked = f"(from the boost-headers Python package, asked {sys.executable})"
    assert f"Boost 1.81 headers in {pkg / 'include'} {asked}" in out
    # No Python that can run: the folder beside cuplug is looked at directly.
    rc, out = configure(src, tmp_path / "build2", "-DPython_EXECUTABLE=/bin/false")
    assert rc == 0, out
    assert f"boost: {pkg / 'include'}" in out and "package beside cuplug" in out


def test_an_installed_wheel_without_boost_names_the_sdk_extra(tmp_path):
    site = tmp_path / "site-packages"
    site.mkdir()
    src = installed_config_project(tmp_path, site)
    rc, out = configure(
        src,
        tmp_path / "build",
        "-DPython_EXECUTABLE=/bin/false",
        "-DCMAKE_IGNORE_PATH=/usr/include;/usr/local/include",  # a system Boost, if any
    )
    assert rc != 0, out
    assert "cuplug: no Boost headers (boost/dll.hpp) found" in out
    assert f"the cuplug installed in {site} need the `sdk` extra" in out
    assert 'python -m pip install "cuplug[sdk]"' in out
