#!/usr/bin/env bash
# Runs every benchmark against its raw baseline: launch overhead, pinned copies, allocation,
# compile times, array operations, random numbers, GL interop (skips without GL), several GPUs
# (skips with one). Usage: tests/benchmarks/run_all.sh [OUTDIR]
# With OUTDIR, every script's results are gathered into OUTDIR/bench.json ({script: results}).
# Needs PYTHONPATH=<build>/python and CUPLUG_BUILD_DIR=<build>; skips cleanly without a GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-}
python=${PYTHON:-python3}
parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT
status=0
for bench in bench_launch bench_graph bench_copy bench_alloc bench_compile bench_array \
  bench_reduction bench_rng bench_gl bench_multigpu; do
  echo "=== $bench"
  extra=()
  # Every generator x distribution at 1 GiB: fewer repeats keep it inside gpu_check's budget.
  [ "$bench" = bench_rng ] && extra=(--repeats 5)
  "$python" "$here/$bench.py" "${extra[@]}" --json-out "$parts/$bench.json" ||
    { echo "$bench: FAILED"; status=1; }
done
if [ -n "$out" ]; then
  mkdir -p "$out"
  "$python" - "$parts" "$out/bench.json" <<'PY'
import json, os, sys
parts, target = sys.argv[1], sys.argv[2]
merged = {}
for name in sorted(os.listdir(parts)):
    with open(os.path.join(parts, name)) as f:
        merged[name[: -len(".json")]] = json.load(f)
with open(target, "w") as f:
    json.dump(merged, f, indent=2)
PY
fi
exit $status
