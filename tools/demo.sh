#!/usr/bin/env bash
# The demo command: builds what the demo needs into build/ when needed (the core, the plugins,
# the extension), then runs examples/demo.py against that build, and the first example of PyCUDA's
# documentation (examples/gpuarray_basic.py) on the GPU, or says what it would do where there is
# none. It installs only what building and running need (tools/ensure_deps.sh --demo).
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
python=$(bash tools/ensure_deps.sh --demo) || { echo "tools/demo.sh: tools/ensure_deps.sh FAILED"; exit 1; }
export PATH="$(dirname "$python"):$PATH"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$python" ||
    { echo "tools/demo.sh: cmake configure FAILED"; exit 1; }
fi
targets=(cuplug_core cuplug_python cuplug_python_files)
# Every plugin the configure step made a target for (one may be left out, e.g. without NVRTC),
# the gl interop plugin (the default interop backend) and the GL window helper among them.
for target in $(for dir in plugins/*/; do echo "cuplug_$(basename "$dir")"; done) \
  cuplug_interop_gl cuplug_gl_window_python; do
  ninja -C "$build" -t query "$target" >/dev/null 2>&1 && targets+=("$target")
done
cmake --build "$build" -j "$jobs" --target "${targets[@]}" ||
  { echo "tools/demo.sh: build FAILED"; exit 1; }

export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
"$python" examples/demo.py || exit $?

# PyCUDA code, unchanged, on cuplug, on the GPU when there is one.
echo
echo "== PyCUDA's first example: examples/gpuarray_basic.py"
sed -n '/^# The PyCUDA example/,/^# fmt: on/p' examples/gpuarray_basic.py | grep -v '^# '
no_gpu=$("$python" - <<'PY'
import cuplug
if not cuplug.is_available():
    try:
        cuplug.driver.init()  # raises the error that says why
        print("the driver reports no CUDA device")
    except cuplug.driver.Error as e:
        print(e)
PY
)
if [ -z "$no_gpu" ]; then
  echo "-- its output on $("$python" -c 'import cuplug.driver as c; c.init(); print(c.Device(0).name())'):"
  exec "$python" examples/gpuarray_basic.py
fi
echo "-- not run: no GPU here ($no_gpu)."
echo "   On a machine with an NVIDIA GPU it copies [1 2 3 4 5] (float32) to the GPU, doubles it"
echo "   there with an elementwise kernel that cuplug generates and compiles (NVRTC, cached on"
echo "   disk), copies the result back and prints:  [ 2.  4.  6.  8. 10.]"
