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
rounds=${3:-3} # the first round warms each tree's kernel cache and is left out of the verdict
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
# label: (bench, path into its JSON, unit, path of the same run's baseline or None). Machine
# drift moves a whole run (on an H200 the raw C++ launch loop measured 3.36 us in one tree's run
# and 4.04 us in the next), so each row is also compared as a ratio to a baseline measured in the
# same process: the raw C++ launch, PyTorch's small op, CuPy's new kernel. The verdict uses those
# ratios where a row has one.
ROWS = {
    "prepared_call": ("bench_launch", ("results", "prepared_call", "best_us"), "us",
                      ("results", "raw C++", "best_us")),
    "__call__": ("bench_launch", ("results", "__call__", "best_us"), "us",
                 ("results", "raw C++", "best_us")),
    "small x*2": ("bench_array", ("small_op", "cuplug", "best_us"), "us",
                  ("small_op", "PyTorch", "best_us")),
    "fresh x*2": ("bench_array", ("fresh_process_ms", "median"), "ms", None),
    "new ElementwiseKernel": ("bench_array", ("elementwise_cold_ms", "median"), "ms",
                              ("cupy_elementwise_cold_ms",)),
    "small sum": ("bench_reduction", ("small_sum", "cuplug", "best_us"), "us",
                  ("small_sum", "PyTorch", "best_us")),
    "new ReductionKernel": ("bench_reduction", ("reduction_cold_ms", "median"), "ms", None),
}


def dig(v, path):
    for key in path:
        v = v[key]
    return float(v)


def best(side, bench, path, base):
    """(best value, best value / same-run baseline or None) over the rounds; the first round
    is left out when there are several (it warms each tree's kernel cache)."""
    value = ratio = None
    for r in range(2 if rounds > 1 else 1, rounds + 1):
        try:
            with open(os.path.join(out, f"{side}-{r}-{bench}.json")) as f:
                data = json.load(f)
            v = dig(data, path)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        value = v if value is None else min(value, v)
        try:
            q = v / dig(data, base) if base else None
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            q = None
        if q is not None:
            ratio = q if ratio is None else min(ratio, q)
    return value, ratio


parts, slower = [], []
for label, (bench, path, unit, base) in ROWS.items():
    (a, qa), (b, qb) = best("old", bench, path, base), best("new", bench, path, base)
    if a is None or b is None:
        parts.append(f"{label} not measured")
        slower.append(label)
        continue
    text = f"{label} {a:.2f} -> {b:.2f}{unit} ({b / a:.2f}x"
    if qa is not None and qb is not None:
        who = "CuPy" if "cupy" in base[0] else base[-2]
        text += f"; against the same run's {who}: {qb / qa:.2f}x"
        change = qb / qa
    else:
        change = b / a
    parts.append(text + ")")
    if change > 1.05:
        slower.append(label)
line = "bench-compare (old -> this tree, %d rounds): %s" % (rounds, ", ".join(parts))
if slower:
    line += " | SLOWER by more than 5%%: %s" % ", ".join(slower)
print(line)
with open(os.path.join(out, "summary.txt"), "w") as f:
    f.write(line + "\n")
sys.exit(1 if slower else 0)
PY
