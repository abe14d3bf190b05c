#!/usr/bin/env bash
# Downloads NVIDIA's CUDA 12 wheels that `tools/gpu_check.sh OUTDIR cu12` runs the GPU tests with
# (the GPU machine has no package index), the oldest the `cu12` extra allows: NVRTC 12.6, the
# 12.9 runtime (the first CUDA 12 runtime wheel with libcudadevrt.a) and CCCL 12.9 into .cu12a/
# (30 MB), cuRAND 10.3.1 into .cu12b/ (56 MB). One carry of the device tool holds 64 MiB, so
# they travel in two commands on the same machine: the first carries .cu12a, the second .cu12b
# and runs the part (the wheels of the first stay there). CI tests the newest (.ci/run). .cu12c/
# (23 MB) holds NVRTC 12.0, under which one axis reduction faulted on an H200 (docs/install.md),
# for a run with CUPLUG_CU12_NVRTC=12.0.
# Usage: bash tools/cu12_wheels.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-python3}
get() {
  local dir=$1
  shift
  rm -rf "$dir" && mkdir -p "$dir"
  "$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$dir" "$@"
}
get .cu12a "nvidia-cuda-nvrtc-cu12==12.6.*" "nvidia-cuda-runtime-cu12==12.9.*" \
  "nvidia-cuda-cccl-cu12==12.9.*"
get .cu12b "nvidia-curand-cu12==10.3.1.*"
get .cu12c "nvidia-cuda-nvrtc-cu12==12.0.*"
du -sh .cu12a .cu12b .cu12c
