#!/usr/bin/env bash
# Makes sure what building and testing cuplug needs is there, installing only what is missing,
# and prints (on stdout, alone) the Python interpreter to build and test with; everything else it
# says goes to stderr. Quick when all is there.
#
# Python: an interpreter already in a virtual environment ($VIRTUAL_ENV, or $PYTHON that is one) is
# used as it is. Otherwise the scripts make and use their own, $CUPLUG_VENV (default .venv in the
# repository), with --system-site-packages so that packages already installed (by apt or pip) are
# reused: a system Python that refuses pip (PEP 668, Debian 12 / Ubuntu 24.04) is never pip'ed into.
# Debian packages (apt-get, as root or through sudo; each one named first): a C++ compiler
# (g++), the Python headers (python3-dev) and venv (python3-venv), GLFW / EGL / GL with their
# headers, GLEW, and Xvfb with Mesa (the GL window helper's tests and checks), when missing. CMake 3.24+,
# Ninja and the Boost headers, when missing, come from PyPI into the virtual environment (cmake,
# ninja, boost-headers), as do NumPy, pybind11 and pytest. The CUDA toolkit is not installed: the
# CMake configure says where it looked and what to set when there is none.
# Usage: python=$(bash tools/ensure_deps.sh [--packaging] [--style] [--demo])   (--packaging adds
# scikit-build-core for pip install .; --style makes ruff and clang-format required; --demo asks
# only what building and running needs: no pytest, no optional test packages, no Xvfb or Mesa).
# Optional packages (pybind11-stubgen for the stub drift test, ruff without --style, hypothesis,
# mypy and basedpyright for the type checking test, mpi4py with MPICH and dask with distributed
# for the multi-device tests) are installed when pip can; when it cannot, a warning says what is
# skipped.
set -u
exec 3>&1 1>&2 # stdout is the answer only
cd "$(dirname "$0")/.." || exit 1
packaging=0
style=0
demo=0
for arg in "$@"; do
  case $arg in
    --packaging) packaging=1 ;;
    --style) style=1 ;;
    --demo) demo=1 ;;
    *) echo "usage: python=\$(bash tools/ensure_deps.sh [--packaging] [--style] [--demo])"; exit 2 ;;
  esac
done
say() { echo "ensure_deps: $*"; }

apt_install() { # apt_install PACKAGE... : as root, or through sudo when it needs no password
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo)
    else
      say "missing $*: install them (sudo apt-get install $*) and run this again"
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null; then
    say "missing $*: install them with the system's package manager (no apt-get here)"
    exit 1
  fi
  say "installing Debian packages (apt-get): $*"
  export DEBIAN_FRONTEND=noninteractive
  { "${sudo[@]}" apt-get update -qq &&
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@"; } ||
    { say "apt-get install $* failed"; exit 1; }
}

# The interpreter: $PYTHON, else the active virtual environment's, else python3.
base=${PYTHON:-${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}}
base=${base:-python3}
apt_missing=()
command -v "${CXX:-g++}" >/dev/null || apt_missing+=(g++)
command -v "$base" >/dev/null || apt_missing+=(python3)
if [ ${#apt_missing[@]} -eq 0 ]; then
  # Python.h for the extension; venv (with ensurepip) only when a venv is to be made.
  "$base" -c 'import os, sysconfig; os.stat(sysconfig.get_paths()["include"] + "/Python.h")' \
    2>/dev/null || apt_missing+=(python3-dev)
  in_venv=$("$base" -c 'import sys; print(int(sys.prefix != sys.base_prefix))')
  [ "$in_venv" = 1 ] || "$base" -c 'import ensurepip, venv' 2>/dev/null || apt_missing+=(python3-venv)
fi
[ $style -eq 1 ] && ! command -v clang-format >/dev/null && apt_missing+=(clang-format)
# OpenGL: the window helper builds without any of these (it loads GLFW, EGL and GL at run time),
# but its tests need the libraries (libglfw3, libegl1 and libgl1 come with the -dev packages) and
# Xvfb with Mesa (tests/python/gl starts an Xvfb), the headers let the build check the helper's
# declarations against them (interop/gl_api_check.cpp), and GLEW builds the raw_gl benchmark.
# Debian's names; checked with dpkg.
if command -v dpkg >/dev/null; then
  gl_packages=(libglfw3-dev libglew-dev libegl-dev libgl-dev)
  [ $demo -eq 1 ] || gl_packages+=(xvfb xauth libgl1-mesa-dri libglx-mesa0 libegl-mesa0)
  for p in "${gl_packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || apt_missing+=("$p")
  done
fi
[ ${#apt_missing[@]} -eq 0 ] || apt_install "${apt_missing[@]}"

python=$("$base" -c 'import sys; print(sys.executable)') || { say "$base does not run"; exit 1; }
if [ "$("$python" -c 'import sys; print(int(sys.prefix != sys.base_prefix))')" != 1 ]; then
  venv=${CUPLUG_VENV:-$PWD/.venv}
  if [ ! -x "$venv/bin/python" ]; then
    say "making a virtual environment for cuplug's build and tests: $venv (from $python)"
    "$python" -m venv --system-site-packages "$venv" || { say "python3 -m venv $venv failed"; exit 1; }
  fi
  python="$venv/bin/python"
fi

# What may come from PyPI into that environment, by import name or check, and pip requirement.
"$python" - "$packaging" "$style" "$demo" <<'PY' || exit 1
import importlib.util
import os
import re
import shutil
import subprocess
import sys

bindir = os.path.dirname(sys.executable)
wanted = {"numpy": "numpy>=1.24", "pybind11": "pybind11>=2.11", "pytest": "pytest>=7"}
# What for, when missing: the test or tool that needs it says so and skips.
optional = {
    # The version the checked-in stubs were made with: another one writes them differently.
    "pybind11_stubgen": ("pybind11-stubgen==3.0.0", "the stub drift test (test_stubs.py)"),
    # The version the tree was formatted with: another one may format differently.
    "ruff": ("ruff==0.17.6", "tools/check_style.sh"),
    "hypothesis": ("hypothesis>=6", "the parsers' property tests (test_fuzz_parsers.py)"),
    # Type checkers over a typed example of everyday use (test_typing.py): mypy, and pyright as
    # basedpyright, whose wheel brings Node (PyPI's pyright downloads Node at its first run).
    # The versions the example was checked with: another one may judge it differently.
    "mypy": ("mypy==2.4.1", "the type checking test (test_typing.py, mypy)"),
    "basedpyright": ("basedpyright==1.40.2", "the type checking test (test_typing.py, pyright)"),
    # mpi4py and an MPI to run it with (MPICH's wheel brings mpiexec and libmpi).
    "mpi4py": ("mpi4py>=4 mpich", "the MPI example's test (test_multidevice.py)"),
    # Dask's cluster of one worker process per device (pure-Python wheels, about 10 s to install).
    "distributed": ("dask distributed", "the Dask workers' test (test_multidevice_dask.py)"),
}
if sys.version_info < (3, 11):
    wanted["tomli"] = "tomli>=1.1"
if sys.argv[1] == "1":
    wanted["scikit_build_core"] = "scikit-build-core>=0.10"
if sys.argv[2] == "1":
    wanted["ruff"] = optional.pop("ruff")[0]
if sys.argv[3] == "1":  # the demo: building and running only
    del wanted["pytest"]
    optional.clear()


def program_version(name):
    """(major, minor) of the program `name` the build would run, or None."""
    path = shutil.which(name, path=bindir + os.pathsep + os.environ.get("PATH", ""))
    if path is None:
        return None
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def has_system_boost():
    cxx = os.environ.get("CXX", "g++")
    probe = subprocess.run(
        [cxx, "-x", "c++", "-std=c++17", "-fsyntax-only", "-"],
        input="#include <boost/dll.hpp>\n",
        capture_output=True,
        text=True,
    )
    return probe.returncode == 0


missing = [req for mod, req in wanted.items() if importlib.util.find_spec(mod) is None]
cmake = program_version("cmake")
if cmake is None or cmake < (3, 24):
    missing.append("cmake>=3.24")
if program_version("ninja") is None:
    missing.append("ninja")
if importlib.util.find_spec("boost_headers") is None and not has_system_boost():
    missing.append("boost-headers>=1.85")


def pip_install(requirements):
    print(f"ensure_deps: pip install {' '.join(requirements)} (into {sys.prefix})", flush=True)
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    return subprocess.call(cmd + requirements, stdout=sys.stderr) == 0


if missing and not pip_install(missing):
    sys.exit(f"ensure_deps: could not install {' '.join(missing)} with pip")
for mod, (req, purpose) in optional.items():
    if importlib.util.find_spec(mod) is None and not pip_install(req.split()):
        print(f"ensure_deps: warning: could not install {req}: {purpose} will not run")
PY
echo "$python" >&3
