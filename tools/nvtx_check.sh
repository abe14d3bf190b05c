#!/usr/bin/env bash
# On the GPU machine: do cuplug's NVTX ranges reach a profiler? Nsight Compute (ncu, which the
# GPU machine has; Nsight Systems it has not) profiles only the kernels launched inside the NVTX
# ranges named by --nvtx-include, so each check below passes when ncu profiled the kernel that a
# range encloses, and fails when the range never reached the tool:
#   - a kernel launch's own range, cuplug's domain ("cuplug@<kernel name>/");
#   - the user's cuplug.profiler.time_range, NVTX's default domain ("user step/"), around an
#     array operation (x * 2);
#   - and, as the control, a range nobody opens: ncu must profile nothing there.
# Usage: bash tools/nvtx_check.sh OUTDIR   (with PYTHONPATH at a build's python/ folder, as
# tools/gpu_check.sh sets it). Prints one summary line; exit 0 when every range was seen.
set -u
out=${1:?usage: bash tools/nvtx_check.sh OUTDIR}
mkdir -p "$out"
if ! command -v ncu >/dev/null; then
  echo "nvtx: ncu not found"
  exit 1
fi
script=$out/nvtx_script.py
cat >"$script" <<'PY'
import numpy as np

import cuplug.autoinit  # noqa: F401
from cuplug import gpuarray, profiler
from cuplug.compiler import SourceModule

mod = SourceModule("__global__ void nvtx_probe(float *a) { a[threadIdx.x] += 1; }")
probe = mod.get_function("nvtx_probe")
a = gpuarray.zeros(32, np.float32)
probe(a, block=(32, 1, 1), grid=(1, 1))  # cuplug's own range only
with profiler.time_range("user step"):
    b = a * 2
a.get(), b.get()
PY
python=$(python3 -c 'import sys; print(sys.executable)')
# profiled NAME NVTX-FILTER: the kernels ncu profiled inside that filter, one per line.
profiled() {
  local log=$out/nvtx_$1.log
  ncu --nvtx --nvtx-include "$2" --clock-control none --metrics gpu__time_duration.sum \
    "$python" "$script" >"$log" 2>&1
  grep -oE '==PROF== Profiling "[^"]+"' "$log" | sed 's/.*"\(.*\)"/\1/'
}
launch=$(profiled launch 'cuplug@nvtx_probe/')
user=$(profiled user 'user step/')
none=$(profiled control 'no such range/')
results=()
if [ "$launch" = nvtx_probe ]; then results+=("launch range seen"); else
  results+=("launch range NOT SEEN (profiled: ${launch:-nothing}; nvtx_launch.log)"); fi
if [ -n "$user" ] && ! echo "$user" | grep -q nvtx_probe; then
  results+=("time_range seen ($(echo "$user" | head -1))"); else
  results+=("time_range NOT SEEN (profiled: ${user:-nothing}; nvtx_user.log)"); fi
if [ -z "$none" ]; then results+=("control ok"); else
  results+=("control FAILED: ncu profiled $none inside a range nobody opens"); fi
line="nvtx: $(IFS='|'; echo "${results[*]}" | sed 's/|/, /g')"
echo "$line"
case $line in *"NOT SEEN"* | *FAILED*) exit 1 ;; esac
