#!/usr/bin/env bash
# On the GPU machine: an older tree against this one, in one command on one machine, for the rows
# a restructuring must not slow down: launches (prepared_call, __call__), small operations from
# Python (x * 2 and sum on 1000 elements), the first x * 2 in a fresh process, and a new
# ElementwiseKernel / ReductionKernel. Both trees are built (in parallel, half the cores each),
# then their benchmarks run in alternating rounds (old, new, old, new, ...) so that a drift of the
# machine falls on both alike; each row reports the best round of each tree.
# The older tree travels as an ignored folder of the working tree (the GPU machine has no git):
#   rm -rf .oldtree && mkdir .oldtree && git archive REV | tar -x -C .oldtree
# and is named in the device call's carry. Bandwidth rows run on 64 MiB operands only (the
# 1 GiB rows are gpu_check.sh's bench part).
# Usage: bash tools/bench_compare.sh OUTDIR OLDTREE [ROUNDS]   (default 3 rounds)
set -u
out=${1:?usage: bash tools/bench_compare.sh OUTDIR OLDTREE [ROUNDS]}
old=${2:?usage: bash tools/bench_compare.sh OUTDIR OLDTREE [ROUNDS]}
rounds=${3:-3}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
old=$(cd "$old" && pwd) || exit 2
cd "$(dirname "$0")/.." || exit 2
new=$PWD
python=$(python3 -c 'import sys; print(sys.executable)')
jobs=$(($(nproc) / 2))
[ $jobs -lt 1 ] && jobs=1
export PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1
unset CUPLUG_CUDA_DRIVER CUPLUG_PLUGIN_PATH CUPLUG_CONFIG CUPLUG_DISABLE_CACHE

build() { # build TREE LOG
  (cd "$1" && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$python" && cmake --build build-gpu -j "$jobs") >"$2" 2>&1
}
build "$old" "$out/build-old.log" &
old_pid=$!
build "$new" "$out/build-new.log" &
new_pid=$!
wait $old_pid || { echo "bench-compare: build of the old tree FAILED (build-old.log)"; exit 1; }
wait $new_pid || { echo "bench-compare: build of this tree FAILED (build-new.log)"; exit 1; }

for round in $(seq 1 "$rounds"); do
  for side in old new; do
    tree=$old
    [ $side = new ] && tree=$new
    for bench in bench_launch bench_array bench_reduction; do
      extra=()
      [ $bench != bench_launch ] && extra=(--mib 64)
      # Each tree's own kernel cache: the fresh-process row reads a warm disk cache of its tree.
      PYTHONPATH="$tree/build-gpu/python" CUPLUG_BUILD_DIR="$tree/build-gpu" \
        CUPLUG_CACHE_DIR="$tree/build-gpu/kernel-cache" \
        timeout 150 "$python" "$tree/tests/benchmarks/$bench.py" "${extra[@]}" \
        --json-out "$out/$side-$round-$bench.json" >>"$out/$side.log" 2>&1 ||
        echo "$side round $round: $bench FAILED" >>"$out/$side.log"
    done
  done
done

"$python" - "$out" "$rounds" <<'PY'
import json
import os
import sys

out, rounds = sys.argv[1], int(sys.argv[2])
ROWS = {  # label: (bench, path into its JSON, unit)
    "prepared_call": ("bench_launch", ("results", "prepared_call", "best_us"), "us"),
    "__call__": ("bench_launch", ("results", "__call__", "best_us"), "us"),
    "small x*2": ("bench_array", ("small_op", "cuplug", "best_us"), "us"),
    "fresh x*2": ("bench_array", ("fresh_process_ms", "median"), "ms"),
    "new ElementwiseKernel": ("bench_array", ("elementwise_cold_ms", "median"), "ms"),
    "small sum": ("bench_reduction", ("small_sum", "cuplug", "best_us"), "us"),
    "new ReductionKernel": ("bench_reduction", ("reduction_cold_ms", "median"), "ms"),
}


def value(side, bench, path):
    best = None
    for r in range(1, rounds + 1):
        try:
            with open(os.path.join(out, f"{side}-{r}-{bench}.json")) as f:
                v = json.load(f)
            for key in path:
                v = v[key]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        best = v if best is None else min(best, v)
    return best


parts, slower = [], []
for label, (bench, path, unit) in ROWS.items():
    a, b = value("old", bench, path), value("new", bench, path)
    if a is None or b is None:
        parts.append(f"{label} not measured")
        slower.append(label)
        continue
    ratio = b / a
    parts.append(f"{label} {a:.2f} -> {b:.2f}{unit} ({ratio:.2f}x)")
    if ratio > 1.05:
        slower.append(label)
line = "bench-compare (old -> this tree, best of %d rounds): %s" % (rounds, ", ".join(parts))
if slower:
    line += " | SLOWER by more than 5%%: %s" % ", ".join(slower)
print(line)
with open(os.path.join(out, "summary.txt"), "w") as f:
    f.write(line + "\n")
sys.exit(1 if slower else 0)
PY
