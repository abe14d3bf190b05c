#!/usr/bin/env bash
# The test command: builds cuplug (Ninja, Release) into build/, runs ctest, then pytest on
# tests/python against the build tree. Exits non-zero on any failure; pytest's summary is last.
# Usage: bash tools/test.sh [extra pytest arguments]
# Environment: CUPLUG_BUILD_DIR (default build), CUPLUG_JOBS (default: every core), PYTHON and
# CUPLUG_VENV (tools/ensure_deps.sh).
set -u
cd "$(dirname "$0")/.." || exit 1
root=$PWD
build=${CUPLUG_BUILD_DIR:-build}
case $build in /*) ;; *) build="$root/$build" ;; esac
jobs=${CUPLUG_JOBS:-$(nproc)}
# The Python to use (a virtual environment; tools/ensure_deps.sh says which and why), with what
# is missing installed; its bin/ first on PATH for the cmake / ninja it may have brought.
python=$(bash tools/ensure_deps.sh) || { echo "tools/test.sh: tools/ensure_deps.sh FAILED"; exit 1; }
export PATH="$(dirname "$python"):$PATH"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$python" ||
  { echo "tools/test.sh: cmake configure FAILED"; exit 1; }
cmake --build "$build" -j "$jobs" || { echo "tools/test.sh: build FAILED"; exit 1; }

ctest --test-dir "$build" --output-on-failure -j "$jobs"
ctest_rc=$?
[ $ctest_rc -eq 0 ] || echo "tools/test.sh: ctest FAILED (exit $ctest_rc); running pytest anyway"

PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" CUPLUG_BUILD_DIR="$build" \
  "$python" -m pytest tests/python -q "$@"
pytest_rc=$?
[ $pytest_rc -ne 0 ] && exit $pytest_rc
[ $ctest_rc -ne 0 ] && exit 1
exit 0
