#!/usr/bin/env bash
# Builds the documentation site (Sphinx + MyST: docs/*.md and the API reference from the built
# extension's docstrings) into build/docs/html, with warnings as errors (-W). Needs a build of
# cuplug in $CUPLUG_BUILD_DIR (default build/, as bash tools/test.sh makes; this script builds
# what is missing there). Sphinx, myst-parser and the furo theme are installed from PyPI into
# the build's virtual environment when missing (tools/ensure_deps.sh's). The docs' Python examples are tested by
# tests/python/package/test_docs.py, not here.
# Usage: bash tools/build_docs.sh [OUTDIR]   (default build/docs/html)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${CUPLUG_BUILD_DIR:-build}
case $build in /*) ;; *) build="$root/$build" ;; esac
out=${1:-$build/docs/html}
python=$(bash tools/ensure_deps.sh) || { echo "tools/build_docs.sh: tools/ensure_deps.sh FAILED"; exit 1; }
PATH="$(dirname "$python"):$PATH"
export PATH

if ! "$python" -c 'import sphinx, myst_parser, furo' 2>/dev/null; then
  echo "tools/build_docs.sh: pip install sphinx myst-parser furo (into $("$python" -c 'import sys; print(sys.prefix)'))"
  "$python" -m pip install -q --disable-pip-version-check "sphinx>=8,<10" "myst-parser>=4,<6" \
    "furo>=2024.8" || { echo "tools/build_docs.sh: could not install sphinx, myst-parser and furo"; exit 1; }
fi

# The API reference imports the extension and its plugins (cuplug.gl needs the gl plugin) from
# the build tree: a whole build, a no-op after tools/test.sh.
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$python" ||
    { echo "tools/build_docs.sh: cmake configure FAILED"; exit 1; }
fi
cmake --build "$build" -j "${CUPLUG_JOBS:-$(nproc)}" ||
  { echo "tools/build_docs.sh: build FAILED"; exit 1; }

start=$SECONDS
CUPLUG_BUILD_DIR="$build" "$python" -m sphinx -W --keep-going -q -b html -d "$build/docs/doctrees" \
  docs "$out" || { echo "tools/build_docs.sh: sphinx-build FAILED (warnings are errors)"; exit 1; }
echo "tools/build_docs.sh: $out/index.html ($((SECONDS - start)) s)"
