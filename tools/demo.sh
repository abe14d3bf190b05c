#!/usr/bin/env bash
# The demo command: builds what the demo needs into build/ when needed (the core, the plugins,
# the extension), then runs examples/demo.py against that build.
# Environment: CUPLUG_BUILD_DIR (default build), CUPLUG_JOBS (default: every core), PYTHON.
set -u
cd "$(dirname "$0")/.." || exit 1
root=$PWD
build=${CUPLUG_BUILD_DIR:-build}
case $build in /*) ;; *) build="$root/$build" ;; esac
jobs=${CUPLUG_JOBS:-$(nproc)}
python=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)') || {
  echo "tools/demo.sh: no Python interpreter (${PYTHON:-python3})"; exit 1; }

PYTHON=$python bash tools/ensure_deps.sh || exit 1
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$python" ||
    { echo "tools/demo.sh: cmake configure FAILED"; exit 1; }
fi
targets=(cuplug_core cuplug_python cuplug_python_files)
# Every plugin the configure step made a target for (one may be left out, e.g. without NVRTC).
for dir in plugins/*/; do
  target="cuplug_$(basename "$dir")"
  ninja -C "$build" -t query "$target" >/dev/null 2>&1 && targets+=("$target")
done
cmake --build "$build" -j "$jobs" --target "${targets[@]}" ||
  { echo "tools/demo.sh: build FAILED"; exit 1; }

PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" exec "$python" examples/demo.py
