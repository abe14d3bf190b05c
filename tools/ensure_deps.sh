#!/usr/bin/env bash
# Checks what building and testing cuplug needs and installs what is missing (Debian packages
# through apt-get when run as root, Python packages through pip). Quick when all is there.
# Usage: bash tools/ensure_deps.sh [--packaging] [--style]   (--packaging adds scikit-build-core
# for pip install .; --style makes clang-format and ruff required, for tools/check_style.sh).
# Uses $PYTHON (default python3). Exits non-zero, saying what to do, when it cannot.
# Optional packages (pybind11-stubgen for the stub drift test, ruff without --style) are
# installed when pip can; when it cannot, a warning says what is skipped.
set -u
python=${PYTHON:-python3}
packaging=0
style=0
for arg in "$@"; do
  case $arg in
    --packaging) packaging=1 ;;
    --style) style=1 ;;
    *) echo "usage: bash tools/ensure_deps.sh [--packaging] [--style]" >&2; exit 2 ;;
  esac
done

apt_missing=()
has_boost() { echo '#include <boost/dll.hpp>' | ${CXX:-g++} -x c++ -std=c++17 -fsyntax-only - 2>/dev/null; }
command -v "${CXX:-g++}" >/dev/null || apt_missing+=(g++)
command -v cmake >/dev/null || apt_missing+=(cmake)
command -v ninja >/dev/null || apt_missing+=(ninja-build)
if ! command -v "${CXX:-g++}" >/dev/null || ! has_boost; then apt_missing+=(libboost-dev); fi
[ $style -eq 1 ] && ! command -v clang-format >/dev/null && apt_missing+=(clang-format)

if [ ${#apt_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "ensure_deps: installing ${apt_missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${apt_missing[@]}"; } ||
      { echo "ensure_deps: apt-get install ${apt_missing[*]} failed"; exit 1; }
  else
    echo "ensure_deps: missing ${apt_missing[*]}: install them (e.g. apt-get install ${apt_missing[*]})"
    exit 1
  fi
fi
has_boost || { echo "ensure_deps: Boost headers (boost/dll.hpp) still not found"; exit 1; }

cmake_version=$(cmake --version | head -1 | grep -oE '[0-9]+\.[0-9]+')
if ! printf '3.24\n%s\n' "$cmake_version" | sort -V -C; then
  echo "ensure_deps: cmake $cmake_version is older than 3.24: pip install 'cmake>=3.24'"
  exit 1
fi
if [ ! -e "${CUDAToolkit_ROOT:-/usr/local/cuda}/include/cuda.h" ] && ! command -v nvcc >/dev/null; then
  echo "ensure_deps: no CUDA toolkit (looked in ${CUDAToolkit_ROOT:-/usr/local/cuda} and for nvcc)"
  exit 1
fi

# Python packages, by import name and pip requirement.
"$python" - "$packaging" "$style" <<'PY' || exit 1
import importlib.util
import subprocess
import sys

wanted = {"numpy": "numpy>=1.24", "pybind11": "pybind11>=2.11", "pytest": "pytest>=7"}
# What for, when missing: the test or tool that needs it says so and skips.
optional = {
    # The version the checked-in stubs were made with: another one writes them differently.
    "pybind11_stubgen": ("pybind11-stubgen==3.0.0", "the stub drift test (test_stubs.py)"),
    # The version the tree was formatted with: another one may format differently.
    "ruff": ("ruff==0.17.6", "tools/check_style.sh"),
    "hypothesis": ("hypothesis>=6", "the parsers' property tests (test_fuzz_parsers.py)"),
}
if sys.version_info < (3, 11):
    wanted["tomli"] = "tomli>=1.1"
if sys.argv[1] == "1":
    wanted["scikit_build_core"] = "scikit-build-core>=0.10"
if sys.argv[2] == "1":
    wanted["ruff"] = optional.pop("ruff")[0]


def pip_install(requirements):
    print(f"ensure_deps: pip install {' '.join(requirements)}", flush=True)
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    return subprocess.call(cmd + requirements) == 0


missing = [req for mod, req in wanted.items() if importlib.util.find_spec(mod) is None]
if missing and not pip_install(missing):
    sys.exit(f"ensure_deps: could not install {' '.join(missing)} with pip")
for mod, (req, purpose) in optional.items():
    if importlib.util.find_spec(mod) is None and not pip_install([req]):
        print(f"ensure_deps: warning: could not install {req}: {purpose} will not run")
PY
