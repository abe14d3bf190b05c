#!/usr/bin/env bash
# Builds real PyCUDA from the sdist carried in the ignored folder .pycuda/ into SITE, and the wheels
# carried beside it (what PyCUDA and its tests need to build and run: pytools, platformdirs, mako,
# ...; docs/compat.md says how to fetch them) into SITE-deps, for the side-by-side runs of
# tools/gpu_check.sh: the PyCUDA run puts both on PYTHONPATH, the cuplug run only SITE-deps (the
# suites import pytools themselves). A SITE that already holds a built PyCUDA is kept (a second
# call on the same machine costs nothing).
# Usage: bash tools/real_pycuda.sh SITE [JOBS]; exit 0 and SITE ready, or non-zero with the reason.
set -eu
site=$(mkdir -p "$1" && cd "$1" && pwd)
jobs=${2:-$(nproc)}
cd "$(dirname "$0")/.."
carried=$PWD/.pycuda
if ls "$site"/pycuda/_driver*.so >/dev/null 2>&1 && [ -d "$site-deps/pytools" ]; then
  echo "real PyCUDA already built in $site"
  exit 0
fi
sdist=$(ls "$carried"/pycuda-*.tar.gz 2>/dev/null | head -1)
[ -n "$sdist" ] || { echo "no PyCUDA sdist in $carried (docs/compat.md: carrying real PyCUDA)"; exit 3; }
python=$(python3 -c 'import sys; print(sys.executable)')
src=$site.src
deps=$site-deps
rm -rf "$site" "$src" "$deps"
mkdir -p "$site" "$src" "$deps"
"$python" -m pip install -q --no-index --no-deps --no-compile --target "$deps" "$carried"/*.whl ||
  { echo "installing the wheels of $carried into $deps failed"; exit 1; }
tar xzf "$sdist" -C "$src" --strip-components=1
cd "$src"
cuda=${CUDA_PATH:-/usr/local/cuda}
# Links against the toolkit's libcuda.so stub (configure.py's default library folders include
# lib64/stubs); the driver's libcuda.so.1 is what loads.
PYTHONPATH=$site:$deps "$python" configure.py --cuda-root="$cuda" >configure.log 2>&1 ||
  { cat configure.log; exit 1; }
printf '\n[build_ext]\nparallel = %s\n' "$jobs" >>setup.cfg
PYTHONPATH=$site:$deps "$python" -m pip install --no-index --no-deps --no-build-isolation --no-compile \
  --target "$site" . >build.log 2>&1 || { tail -30 build.log; exit 1; }
cd "$site"
PYTHONPATH=$site:$deps "$python" -c 'import pycuda, pycuda._driver as d; print("real PyCUDA", pycuda.VERSION_TEXT, "built, CUDA", d.get_version())'
