#!/usr/bin/env bash
# On the GPU test machine (shared/gpu-machine.md): build cuplug into build-gpu/, run ctest and
# pytest against the real driver, compute-sanitizer (memcheck) over the GPU tests (racecheck and
# synccheck over cuplug, CuPy and PyTorch exchanging arrays on their streams), then the
# benchmarks (launch, copies, allocation, compile, arrays, reductions, RNG, GL where .gl/ is;
# with several GPUs the multi-device tests and bench_multigpu, in a summary field of their own).
# Logs go to OUTDIR; the last line printed is one summary line. Exit non-zero on any failure.
# Fits in 10 minutes: every step runs under its own time limit.
# Usage: bash tools/gpu_check.sh OUTDIR [all|tests|sanitize|sanitize1|sanitize2|bench|multigpu|compat|libs|cu12]
#        bash tools/gpu_check.sh OUTDIR memcheck PYTEST_ARGS...  (memcheck over the tests named,
#        one process, -v: to find which test a sanitizer finding or crash belongs to)
# All of it does not fit the 10 minutes one device command may take; `tests` (build, ctest,
# pytest, racecheck, synccheck), `sanitize1` and `sanitize2` (build, memcheck over half the GPU
# tests each, in two processes) and `bench` (build, benchmarks), as four commands on the same
# machine (the later ones find the build done), give every step room. A pass is all four parts
# passing. On a machine with two GPUs or more, `sanitize` runs all of memcheck in one command
# (one chain of groups per GPU at once), so a pass there is `tests`, `sanitize` and `bench`.
# With CUPLUG_GPU_CHECK_REUSE=1 a part uses the build and wheels an earlier part left, so two
# parts can run at once in one command (`sanitize` beside `cu12` on two GPUs).
# `multigpu` builds and runs only the multi-GPU tests, examples and bench_multigpu.py (a machine
# with two GPUs or more; docs/multigpu.md). `cu12` runs the GPU tests through CUDA 12's NVRTC and
# cuRAND (NVIDIA's wheels carried in .cu12a/ and .cu12b/, tools/cu12_wheels.sh).
set -u
part=${2:-all}
memcheck_args=()
if [ "$part" = memcheck ] && [ $# -gt 2 ]; then
  memcheck_args=("${@:3}")
elif [ $# -lt 1 ] || [ $# -gt 2 ] || ! [[ $part =~ ^(all|tests|sanitize|sanitize1|sanitize2|bench|multigpu|compat|libs|cu12)$ ]]; then
  echo "usage: bash tools/gpu_check.sh OUTDIR [all|tests|sanitize|sanitize1|sanitize2|bench|multigpu|compat|libs|cu12]" >&2
  echo "       bash tools/gpu_check.sh OUTDIR memcheck PYTEST_ARGS..." >&2
  exit 2
fi
# Seconds the steps after pytest / after the sanitizer keep for themselves.
case $part in
  all) after_pytest=230 after_sanitizer=100 ;;
  tests) after_pytest=80 after_sanitizer=0 ;;
  sanitize* | bench | multigpu | compat | libs | memcheck | cu12) after_pytest=0 after_sanitizer=0 ;;
esac
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2
root=$PWD
build=$root/build-gpu
# OpenGL: the GL .deb files the tree brought in .gl/ (docs/gl.md), unpacked and put on the paths.
if [ -d "$root/.gl" ]; then
  # shellcheck source=tools/gl_setup.sh
  source "$root/tools/gl_setup.sh" "$root/.gl/root" >"$out/gl_setup.log" 2>&1 || echo "gl_setup failed ($out/gl_setup.log)"
fi
jobs=$(nproc)
deadline=$((SECONDS + 575)) # leaves a margin under the 10-minute limit of one command
summary=()
failed=0

finish() {
  local line
  local name=cuplug-gpu
  [ "$part" != all ] && name="cuplug-gpu [$part]"
  line="$name: $(IFS='|'; echo "${summary[*]}" | sed 's/|/ | /g')"
  echo "$line" >"$out/summary.txt"
  echo "$line"
  exit $failed
}
note() { summary+=("$1"); }
fail() { summary+=("$1"); failed=1; }
# Seconds a step may take: its cap, or what is left before the deadline minus a reserve.
budget() {
  local cap=$1 left=$((deadline - SECONDS - $2))
  [ $left -lt $cap ] && cap=$left
  [ $cap -lt 10 ] && cap=10
  echo $cap
}

# Like `timeout SECONDS command...`, but a command that runs out of time first has the stacks of
# its whole process tree written to STACKLOG (py-spy, gdb or cuda-gdb, whichever is there; the
# GPU machine has only cuda-gdb), then gets SIGINT (pytest then prints what failed so far) and,
# 20 seconds later, SIGKILL. Exit 124 on time-out. With WATCH_LOG and WATCH_DONE set, a command
# whose log shows WATCH_DONE (pytest's last line) but that is still running 45 s later has hung
# at exit: it is treated the same way at once, instead of using up its whole time.
if env --default-signal=INT true 2>/dev/null; then
  default_int=(env --default-signal=INT) # coreutils 8.31 and newer
else
  default_int=(python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])')
fi
descendants() {
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}
run_watched() {
  local limit=$1 stacks=$2 pid end p dumped=0 pythons=()
  shift 2
  watched_exit=0 # set when WATCH_DONE showed: a time-out after it is a hang at exit
  # A command a script starts with & has SIGINT ignored, and Python then installs no
  # KeyboardInterrupt handler: the SIGINT below, meant to make pytest print what failed, did
  # nothing, and the command was killed 20 s later with no summary. SIGINT back to its default:
  "${default_int[@]}" "$@" &
  pid=$!
  end=$((SECONDS + limit))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $end ]; do
    sleep 1
    if [ -n "${WATCH_DONE:-}" ] && grep -qE "$WATCH_DONE" "$WATCH_LOG" 2>/dev/null; then
      [ $((SECONDS + 45)) -lt $end ] && end=$((SECONDS + 45))
      watched_exit=1
      WATCH_DONE=
    fi
  done
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid"
    return
  fi
  # Every process and, for the pipes the top process reads, every other process holding one
  # open: an orphan that inherited an xdist worker's stdout keeps the controller reading a pipe
  # that never ends, though the worker itself has exited (a zombie, empty cmdline, below).
  {
    echo "=== processes (before any signal)"
    ps -eo pid,ppid,pgid,etimes,stat,args --sort=start_time | cut -c1-220
    echo "=== holders of the pipes of process $pid"
    for pipe in $(find /proc/"$pid"/fd -type l -exec readlink {} + 2>/dev/null | grep '^pipe:' | sort -u); do
      for fd in /proc/[0-9]*/fd/*; do
        [ "$(readlink "$fd" 2>/dev/null)" = "$pipe" ] && echo "$pipe $fd $(tr '\0' ' ' <"${fd%/fd/*}/cmdline" 2>/dev/null | cut -c1-120)"
      done
    done
  } >"$stacks.ps" 2>&1
  # Python stacks first: tests/python/conftest.py prints them to the run's log on SIGUSR1. Only
  # to Python processes: compute-sanitizer's command line names pytest too, and SIGUSR1 ends
  # it (and the pytest under it) before pytest can print what failed.
  pythons=()
  for p in $pid $(descendants "$pid"); do
    case $(cat "/proc/$p/comm" 2>/dev/null) in python*) ;; *) continue ;; esac
    grep -qE "pytest|import sys;exec" "/proc/$p/cmdline" 2>/dev/null && kill -USR1 "$p" 2>/dev/null &&
      pythons+=("$p")
  done
  sleep 2
  for p in $pid $(descendants "$pid"); do
    echo "=== process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-200)"
    if command -v py-spy >/dev/null; then
      timeout 20 py-spy dump --native --pid "$p" 2>&1
    elif command -v gdb >/dev/null; then
      timeout 30 gdb -p "$p" -batch -ex 'thread apply all bt 30' 2>&1 | grep -E '^(Thread|#)'
    elif command -v cuda-gdb >/dev/null && { [ "$p" != "$pid" ] || grep -q pytest "/proc/$p/cmdline"; } &&
      [ $((dumped++)) -lt 4 ]; then
      # pytest itself (its xdist controller hung in a garbage collection at exit on the H100)
      # and the first processes under the top one (pytest's workers, ctest's tests)
      timeout 40 cuda-gdb -p "$p" -batch -ex 'thread apply all bt 30' 2>&1 | grep -E '^(Thread|#)'
    else
      grep -H . /proc/"$p"/task/*/wchan 2>/dev/null
    fi
  done >"$stacks" 2>&1
  # SIGINT to the Python processes as well: a tool between (compute-sanitizer) may not pass it on,
  # and pytest prints its summary of what failed on SIGINT.
  kill -INT "$pid" "${pythons[@]}" 2>/dev/null
  end=$((SECONDS + 20))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 1; done
  for p in $(descendants "$pid") $pid; do kill -KILL "$p" 2>/dev/null; done
  wait "$pid"
  return 124
}

# "= 3 failed, 1964 passed, 169 skipped, 4 warnings in 98.1s =" -> "3 failed 1964 passed ..."
outcome() {
  grep -E '^[=]* ?[0-9]+ (passed|failed|error|skipped|deselected)' "$1" | tail -1 |
    sed -E 's/^=+ //; s/ =+$//; s/ in [0-9.]+s.*$//; s/,//g'
}
python=$(python3 -c 'import sys; print(sys.executable)')
# CUPLUG_GPU_CHECK_REUSE=1: use build-gpu/ and the wheels installed beside it as an earlier part
# left them (no build, no pip): lets two parts run at once in one command, say `sanitize` and
# `cu12` on a machine of two GPUs, without both writing the same folders.
reuse=
[ -n "${CUPLUG_GPU_CHECK_REUSE:-}" ] && [ -f "$build/build.ninja" ] && reuse=1
export PYTHONPATH="$build/python" CUPLUG_BUILD_DIR="$build" PYTHONUNBUFFERED=1
# Wheels brought in the ignored folder .whl/ (PyOpenGL for PyCUDA's GL example, say: the GPU
# machine has no package index), installed beside the build's Python package.
if [ -n "$reuse" ] && [ -d "$build/site" ]; then
  PYTHONPATH="$PYTHONPATH:$build/site"
elif ls "$root"/.whl/*.whl >/dev/null 2>&1; then
  "$python" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$build/site" \
    "$root"/.whl/*.whl >"$out/wheels.log" 2>&1 && PYTHONPATH="$PYTHONPATH:$build/site"
fi
# An MPI for the multi-GPU MPI example, from the ignored folder .mpi/ (mpi4py and MPICH's wheels;
# docs/multigpu.md): installed under one prefix, mpiexec put on PATH and libmpi on the library
# path (mpi4py dlopens it), the Python package found wherever this Python's scheme put it.
if ls "$root"/.mpi/*.whl >/dev/null 2>&1; then
  if { [ -n "$reuse" ] && [ -d "$build/mpi" ]; } ||
    "$python" -m pip install -q --no-index --no-deps --no-compile --upgrade --prefix "$build/mpi" \
      "$root"/.mpi/*.whl >"$out/mpi_wheels.log" 2>&1; then
    mpi_pkg=$(find "$build/mpi" -type d -name mpi4py -path '*-packages/*' | head -1)
    mpi_lib=$(find "$build/mpi" -name 'libmpi.so*' | head -1)
    PYTHONPATH="$PYTHONPATH:${mpi_pkg%/mpi4py}"
    PATH="$build/mpi/bin:$PATH"
    export LD_LIBRARY_PATH="${mpi_lib%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
fi
# Dask for the multi-GPU Dask example (dask, distributed and their pure-Python dependencies as
# wheels in the ignored folder .dask/, docs/multigpu.md): installed under one prefix and put on
# the Python path.
if ls "$root"/.dask/*.whl >/dev/null 2>&1; then
  if { [ -n "$reuse" ] && [ -d "$build/dask" ]; } ||
    "$python" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$build/dask" \
      "$root"/.dask/*.whl >"$out/dask_wheels.log" 2>&1; then
    PYTHONPATH="$PYTHONPATH:$build/dask"
  else
    echo "installing .dask/ failed ($out/dask_wheels.log)"
  fi
fi
# Real driver and devices: never the fake one, and no stale choices from the environment:
# CUPLUG_<KIND> for every kind of the kinds table ("  X(kind, ..." lines).
kind_vars=$(sed -n 's/^  X(\([a-z_]*\),.*/CUPLUG_\U\1/p' core/include/cuplug/plugin_kinds.hpp)
# shellcheck disable=SC2086 # one variable name per word
unset CUPLUG_CUDA_DRIVER $kind_vars CUPLUG_PLUGIN_PATH CUPLUG_CONFIG CUPLUG_DISABLE_CACHE
export CUPLUG_CACHE_DIR="$build/kernel-cache"
# conftest.py: a test process that hangs at exit prints where (to the log, via the xdist worker's
# inherited stderr) and exits; well before the 45 s after which run_watched calls the run hung.
export CUPLUG_TEST_EXIT_TIMEOUT=20
export PATH="/usr/local/cuda/bin:$PATH"
# Several GPUs add a multi-GPU field to the summary (docs/multigpu.md); one GPU adds nothing.
# CUDA_VISIBLE_DEVICES (indices) gives a part its GPUs, so parts can run at once on one machine
# (on four GPUs: `sanitize` on 0,1 beside `cu12` on 2 and `compat` on 3).
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  IFS=, read -ra devices <<<"$CUDA_VISIBLE_DEVICES"
else
  mapfile -t devices < <(nvidia-smi -L 2>/dev/null | grep '^GPU ' | sed -E 's/^GPU ([0-9]+):.*/\1/')
fi
gpus=${#devices[@]}

# --- build ------------------------------------------------------------------------------------
if [ -n "$reuse" ]; then
  note "build reused (CUPLUG_GPU_CHECK_REUSE)"
else
  if ! echo '#include <boost/dll.hpp>' | g++ -std=c++17 -DBOOST_DLL_USE_STD_FS -x c++ -fsyntax-only - \
    >"$out/build.log" 2>&1; then
    fail "build FAILED: Boost headers (boost/dll.hpp) not found; install Boost >= 1.74 headers"
    finish
  fi
  limit=$(budget 300 200)
  {
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    timeout "$limit" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPython_EXECUTABLE="$python" &&
      timeout "$limit" cmake --build "$build" -j "$jobs"
  } >>"$out/build.log" 2>&1
  rc=$?
  if [ $rc -eq 124 ]; then
    fail "build TIMEOUT after ${limit}s (build.log)"
    finish
  elif [ $rc -ne 0 ]; then
    fail "build FAILED (build.log: $(grep -m1 -E 'error:|FAILED:|CMake Error' "$out/build.log" | cut -c1-160))"
    finish
  fi
  note "build ok"
fi

# --- compat: external suites, unmodified, on real PyCUDA and on cuplug side by side -----------
if [ "$part" = compat ] || [ "$part" = libs ]; then
  site=$build/realpycuda
  if ! timeout "$(budget 240 200)" bash tools/real_pycuda.sh "$site" "$jobs" >"$out/real_pycuda.log" 2>&1; then
    fail "real PyCUDA build FAILED (real_pycuda.log: $(tail -1 "$out/real_pycuda.log" | cut -c1-120))"
    finish
  fi
  note "$(tail -1 "$out/real_pycuda.log")"
  if [ "$part" = libs ]; then
    lines=$(timeout "$(budget 560 0)" bash tools/third_party_suites.sh "$out" "$site" 75)
    while IFS= read -r line; do
      case $line in *"; 0 pass only on PyCUDA"*) note "$line" ;; *) fail "$line" ;; esac
    done <<<"$lines"
    finish
  fi
  xargs_=(-p no:benchmark)
  "$python" -c 'import xdist' 2>/dev/null && xargs_+=(-n 8 --dist worksteal)
  "$python" -c 'import pytest_timeout' 2>/dev/null && xargs_+=(--timeout 300)
  # test_curand_wrappers_8gb / _16gb fill 2^31 and 2^32 elements through the device-API
  # generators: on an H100 they took 102 s and over 300 s on real PyCUDA, more than this part has.
  big_rng="not curand_wrappers_8gb and not curand_wrappers_16gb"
  tests=("$build/realpycuda.src/test/test_driver.py" "$build/realpycuda.src/test/test_gpuarray.py"
    "$build/realpycuda.src/test/test_cumath.py")
  line=$(timeout "$(budget 500 0)" "$python" tools/side_by_side.py "$out" pycuda-suite "$site" "$site-deps" \
    "${tests[@]}" -- --durations=15 "${xargs_[@]}" -k "$big_rng")
  rc=$?
  if [ $rc -eq 0 ]; then note "$line"; else fail "${line:-pycuda-suite TIMEOUT or FAILED (exit $rc)}"; fi
  finish
fi

# --- memcheck over chosen tests, verbose: which test a finding or a crash belongs to -----------
if [ "$part" = memcheck ]; then
  run_watched "$(budget 560 0)" "$out/memcheck-stacks.log" compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 86 --print-limit 20 \
    --target-processes application-only "$python" -m pytest -v -rfE --tb=long -p no:cacheprovider \
    -p no:benchmark "${memcheck_args[@]}" >"$out/memcheck.log" 2>&1
  rc=$?
  last=$(grep -E '::.* (PASSED|FAILED|SKIPPED|ERROR)|^tests/.*::' "$out/memcheck.log" | tail -1 | cut -c1-160)
  crash=$(grep -m1 -oE 'Fatal Python error: [A-Za-z ]+' "$out/memcheck.log")
  errors=$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$out/memcheck.log" | awk '{s += $3} END {print s + 0}')
  if [ -n "$crash" ]; then
    fail "memcheck CRASHED: $crash; last test line: $last"
  elif [ "$errors" -gt 0 ] || [ $rc -ne 0 ]; then
    fail "memcheck FAILED (exit $rc, $errors errors; memcheck.log)"
  else
    note "memcheck ok ($(outcome "$out/memcheck.log"))"
  fi
  finish
fi

# --- the CUDA 12 path: the GPU tests with CUDA 12's NVRTC and cuRAND (docs/install.md) ----------
# NVIDIA's CUDA 12 wheels, carried in .cu12*/ folders (tools/cu12_wheels.sh: more than one carry
# holds, so in two), unpacked into a site folder of their own; CUPLUG_TOOLKIT_MAJOR=12 makes cuplug
# take them on this CUDA 13 driver, which runs CUDA 12 code, as a CUDA 12 driver would have it.
if [ "$part" = cu12 ]; then
  site=$build/cu12-site
  rm -rf "$site" && mkdir -p "$site"
  # One NVRTC: CUPLUG_CU12_NVRTC picks it by version when several are carried (12.6 in .cu12a,
  # 12.0 in .cu12c: tools/cu12_wheels.sh), 12.6 (the extra's oldest) by default.
  for w in "$root"/.cu12*/*.whl; do
    case ${w##*/} in
      nvidia_cuda_nvrtc_cu12-"${CUPLUG_CU12_NVRTC:-12.6}".*) ;;
      nvidia_cuda_nvrtc_cu12-*) continue ;;
    esac
    [ -f "$w" ] && "$python" -m zipfile -e "$w" "$site"
  done
  if [ ! -f "$site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" ] ||
    ! ls "$site"/nvidia/curand/lib/libcurand.so.* >/dev/null 2>&1; then
    fail "cu12 FAILED: NVIDIA's CUDA 12 NVRTC and cuRAND wheels not carried (.cu12*/, tools/cu12_wheels.sh)"
    finish
  fi
  export CUPLUG_TOOLKIT_MAJOR=12 PYTHONPATH="$PYTHONPATH:$site" CUPLUG_CACHE_DIR="$build/cu12-cache"
  "$python" -m cuplug info >"$out/cu12-info.log" 2>&1
  nvrtc=$(grep -m1 -E '^  NVRTC ' "$out/cu12-info.log" | awk '{print $2}')
  curand=$(grep -m1 -E '^  libcurand' "$out/cu12-info.log" | grep -c "$site")
  if [ "${nvrtc%%.*}" != 12 ] || [ "$curand" != 1 ]; then
    fail "cu12 FAILED: NVRTC ${nvrtc:-none} and cuRAND not from the CUDA 12 wheels (cu12-info.log)"
    finish
  fi
  cu12_args=(-p no:cacheprovider -p no:benchmark -rfE --tb=short)
  # Half the cores, at most 16 workers: on two GPUs this part runs beside `sanitize`, whose two
  # memcheck processes need few of the 32 cores.
  "$python" -c 'import xdist' 2>/dev/null && cu12_args+=(-n "$(( jobs / 2 > 16 ? 16 : jobs / 2 ))" --dist worksteal)
  "$python" -c 'import pytest_timeout' 2>/dev/null && cu12_args+=(--timeout 120)
  WATCH_LOG=$out/pytest-cu12.log WATCH_DONE='^=+ .*[0-9]+ (passed|failed).* in [0-9.]+s' \
    run_watched "$(budget 420 0)" "$out/pytest-cu12-stacks.log" "$python" -m pytest tests/python \
    -m "(gpu or real_gpu) and not alone" "${cu12_args[@]}" >"$out/pytest-cu12.log" 2>&1
  rc=$?
  result=$(outcome "$out/pytest-cu12.log")
  if [ $rc -eq 0 ]; then
    note "cu12 (NVRTC $nvrtc, cuRAND from the wheels, CUPLUG_TOOLKIT_MAJOR=12): pytest $result"
  else
    fail "cu12 (NVRTC $nvrtc): pytest FAILED ${result:-(exit $rc)} (pytest-cu12.log)"
  fi
  finish
fi

if [ "$part" = all ] || [ "$part" = tests ]; then
# --- ctest ------------------------------------------------------------------------------------
# Less the `slow` ones: CPU-only (cuRAND's host MRG32k3a and MT19937, about 50 s), run by CI.
run_watched "$(budget 90 170)" "$out/ctest-stacks.log" ctest --test-dir "$build" \
  --output-on-failure -j "$jobs" -LE slow >"$out/ctest.log" 2>&1
rc=$?
# "100% tests passed, 0 tests failed out of 16" (CMake 3.x) or "100% tests passed out of 16" (4.x)
total=$(grep -oE 'tests passed.* out of [0-9]+' "$out/ctest.log" | tail -1 | grep -oE '[0-9]+$')
bad=$(grep -oE '[0-9]+ tests failed' "$out/ctest.log" | tail -1 | grep -oE '^[0-9]+')
bad=${bad:-0}
if [ -n "$total" ] && [ $rc -eq 0 ]; then
  note "ctest $((total - bad))/$total"
else
  fail "ctest FAILED ${total:+$((total - bad))/$total }(exit $rc)"
fi

# --- pytest (all tests, real GPU) -------------------------------------------------------------
# On the GPU machine most of the time goes to compiling kernels (NVRTC, on the CPU): with
# pytest-xdist there, one process per two cores shares the GPU; the tests marked `alone` (they
# read device-wide free memory) then run by themselves. pytest-timeout, where it is installed,
# fails a test that hangs instead of the whole run.
parallel=()
if "$python" -c 'import xdist' 2>/dev/null; then
  workers=$((jobs / 2))
  [ $workers -gt 8 ] && workers=8
  [ $workers -ge 2 ] && parallel=(-n "$workers" --dist worksteal)
fi
timeouts=()
if "$python" -c 'import pytest_timeout' 2>/dev/null; then
  timeouts=(--timeout 120)
fi
pytest_args=(-rfE --tb=short -p no:cacheprovider -p no:benchmark "${timeouts[@]}")
# The whole suite took 264-268 s with 8 workers on an H200 (5,127 tests, 2026-11-28): a cap of
# 240 s cut it short twice, which the script then mistook for a hang at exit.
pytest_limit=$(budget 300 "$after_pytest")
WATCH_LOG=$out/pytest.log WATCH_DONE='^=+ .*[0-9]+ (passed|failed).* in [0-9.]+s' \
  run_watched "$pytest_limit" "$out/pytest-stacks.log" "$python" -m pytest tests/python \
  --durations=15 -o faulthandler_timeout=100 "${pytest_args[@]}" "${parallel[@]}" \
  >"$out/pytest.log" 2>&1
rc=$?
result=$(outcome "$out/pytest.log")
if [ ${#parallel[@]} -gt 0 ] && [ $rc -ne 124 ]; then
  run_watched "$(budget 60 $((after_pytest > 10 ? after_pytest - 10 : 0)))" "$out/pytest-alone-stacks.log" "$python" -m pytest tests/python \
    -m alone "${pytest_args[@]}" >"$out/pytest-alone.log" 2>&1
  rc_alone=$?
  [ $rc_alone -eq 5 ] && rc_alone=0 # none marked `alone`: nothing to run
  [ $rc -eq 0 ] && rc=$rc_alone
  result="${result:-no result} (parallel) + $(outcome "$out/pytest-alone.log") (alone)"
fi
# conftest.py prints the driver it chose; GPU tests prove nothing unless it is the real one.
mode=$(grep -m1 -oE 'cuplug CUDA driver: [A-Z]+' "$out/pytest.log" | awk '{print $4}')
if [ "$mode" != REAL ]; then
  fail "pytest FAILED: driver mode ${mode:-unknown}, not REAL ($(grep -m1 'cuplug CUDA driver' \
    "$out/pytest.log" | cut -c1-160))"
elif [ $rc -eq 0 ]; then
  note "pytest ${result:-ok}"
elif [ $rc -eq 124 ] && [ "$watched_exit" = 1 ]; then
  fail "pytest HUNG AT EXIT after $result (pytest-stacks.log)"
elif [ $rc -eq 124 ]; then
  fail "pytest TIMEOUT after ${pytest_limit}s${result:+ (then printed: $result)} (pytest.log, pytest-stacks.log)"
else
  fail "pytest FAILED ${result:-(exit $rc)}"
fi

fi # tests: ctest and pytest

# --- compute-sanitizer (memcheck) over the GPU tests --------------------------------------------
# The GPU tests less the `sweep` ones (they repeat kernels other tests already run, over every
# dtype), the `alone` ones (they read device-wide free memory) and the eight-threads hang tests,
# in four processes of a quarter of the test files each (memcheck does not follow xdist's
# workers). One process over all of them crashed inside make_context after about 1,000 tests
# (docs/benchmarks.md, 2026-11-28). Under the tool, a test that starts a child process skips
# when it starts it (tests/python/conftest.py: the tool watches only this process, and waiting
# for children crashed it). On one H200 the four groups one after the other need about 12
# minutes, more than one command may take, and four at once on one GPU were no faster: there,
# `sanitize1` runs groups 1 and 2 and `sanitize2` groups 3 and 4, a pass is both. With two GPUs
# or more (all of the machine's, or those CUDA_VISIBLE_DEVICES names), `sanitize` runs all four in
# one command, one chain of groups per GPU at once (groups 1 and 3 on the first, 2 and 4 on the
# second). -v names every test, so a
# time-out still says which ones ran and which failed.
# sanitize_group G LIMIT GPU: memcheck over group G's files (GPU: its CUDA_VISIBLE_DEVICES, or
# empty), within LIMIT seconds; writes sanitizer-G.log and the outcome to sanitizer-G.result.
sanitize_group() {
  local g=$1 limit=$2 gpu=$3 chunk=() i log rc found ran crash start=$SECONDS left resumed=""
  for i in "${!files[@]}"; do [ $((i % groups + 1)) -eq "$g" ] && chunk+=("${files[$i]}"); done
  log=$out/sanitizer-$g.log
  [ -n "$gpu" ] && export CUDA_VISIBLE_DEVICES=$gpu
  # API errors are not reported: the tests provoke them on purpose (out of memory, unknown
  # symbols, the end of cuFuncGetParamInfo's parameter list); memory access errors are. The
  # default backtraces (host and device): with device ones only, two groups crashed inside
  # cuCtxDestroy (H200, 2026-11-28), which the defaults never did in a whole run. Their host
  # backtraces keep Python frames alive, so the tests that delete and check skip under the tool
  # (tests/python/support/sanitizer.py). -v names the test each finding belongs to.
  memcheck_group() { # LIMIT LOG STACKS
    run_watched "$1" "$3" compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 86 --print-limit 20 \
      --target-processes application-only "$python" -m pytest "${chunk[@]}" -v -rfE --tb=short \
      -p no:cacheprovider -p no:benchmark -m "(gpu or real_gpu) and not sweep and not alone" \
      -k "not examples and not never_hang" --durations=10 >"$2" 2>&1
  }
  memcheck_group "$limit" "$log" "$out/sanitizer-$g-stacks.log"
  rc=$?
  [ $rc -eq 5 ] && rc=0 # no GPU test in this group's files
  crash=$(grep -m1 -oE 'Fatal Python error: [A-Za-z ]+' "$log")
  # After a crash, the rest of the group once more, without the tests that had run (the one
  # that crashed included: tests/python/conftest.py reads CUPLUG_DESELECT_FILE), so the tool
  # still sees the whole group; the crash is reported all the same.
  left=$((limit - (SECONDS - start)))
  if [ -n "$crash" ] && [ $left -gt 30 ]; then
    sed -nE 's/^(tests\/.*::.*) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)( .*|\[.*|$)/\1/p' "$log" \
      >"$out/sanitizer-$g-done.txt"
    CUPLUG_DESELECT_FILE=$out/sanitizer-$g-done.txt memcheck_group "$left" \
      "$out/sanitizer-$g-resumed.log" "$out/sanitizer-$g-resumed-stacks.log"
    local rc2=$? crash2
    crash2=$(grep -m1 -oE 'Fatal Python error: [A-Za-z ]+' "$out/sanitizer-$g-resumed.log")
    resumed=", then without the $(wc -l <"$out/sanitizer-$g-done.txt") tests that had run $(grep -cE ' PASSED( |$)' "$out/sanitizer-$g-resumed.log") passed"
    [ -n "$crash2" ] && resumed+=", CRASHED again"
    [ $rc2 -eq 124 ] && resumed+=", TIMEOUT"
    cat "$out/sanitizer-$g-resumed.log" >>"$log"
  fi
  found=$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$log" | awk '{s += $3} END {print s + 0}')
  ran=$(grep -cE ' PASSED( |$)' "$log")
  # sanitizer-G.result: "errors passed", the group's problem (an empty line when none), then
  # its failed tests, a line each.
  {
    echo "$found $ran"
    if [ "$found" -gt 0 ] || [ $rc -eq 86 ]; then
      echo "group $g: $found memcheck errors"
    elif [ -n "$crash" ]; then
      # A crash of the tested process (not a memcheck finding) can leave the tool waiting for
      # the time limit: name it instead of reporting a time-out.
      echo "group $g CRASHED: $crash$resumed ($ran passed in all)"
    elif [ $rc -eq 124 ]; then
      echo "group $g TIMEOUT after ${limit}s ($ran passed)"
    elif [ $rc -ne 0 ]; then
      echo "group $g: pytest exit $rc under memcheck"
    else
      echo
    fi
    grep -oE '^[^ ]+::[^ ]+ (FAILED|ERROR)' "$log" | sed 's/ .*//; s/.*:://'
  } >"$out/sanitizer-$g.result"
}
# sanitize_chain GPU G...: the groups one after the other, each given its share of what is left.
sanitize_chain() {
  local gpu=$1 n limit
  shift
  local chain=("$@")
  for n in "${!chain[@]}"; do
    limit=$(( (deadline - SECONDS - after_sanitizer) / (${#chain[@]} - n) ))
    [ $limit -lt 10 ] && limit=10
    sanitize_group "${chain[$n]}" "$limit" "$gpu"
  done
}
if [ "$part" = all ] || [[ $part = sanitize* ]]; then
if ! command -v compute-sanitizer >/dev/null; then
  fail "sanitizer FAILED: compute-sanitizer not found"
else
  mapfile -t files < <(find tests/python -name 'test_*.py' | sort)
  groups=4 passed=0 errors=0 problems=() failures=()
  case $part in
    sanitize1) mine=(1 2) ;;
    sanitize2) mine=(3 4) ;;
    *) mine=(1 2 3 4) ;;
  esac
  rm -f "$out"/sanitizer-*.result
  chains=1
  if [ "${gpus:-0}" -gt 1 ]; then
    chains=$gpus
    [ "$chains" -gt ${#mine[@]} ] && chains=${#mine[@]}
  fi
  if [ "$chains" -eq 1 ]; then
    sanitize_chain "" "${mine[@]}"
  else
    for ((c = 0; c < chains; c++)); do
      chain=()
      for n in "${!mine[@]}"; do [ $((n % chains)) -eq $c ] && chain+=("${mine[$n]}"); done
      (sanitize_chain "${devices[$c]}" "${chain[@]}") &
    done
    wait
  fi
  for g in "${mine[@]}"; do
    if [ -f "$out/sanitizer-$g.result" ]; then
      { read -r found ran; read -r problem; mapfile -t bad; } <"$out/sanitizer-$g.result"
      errors=$((errors + found))
      passed=$((passed + ran))
      [ -n "$problem" ] && problems+=("$problem")
      failures+=("${bad[@]}")
    else
      problems+=("group $g did not run")
    fi
  done
  where=""
  [ "$chains" -gt 1 ] && where=" on $chains GPUs at once"
  failed_tests=
  [ ${#failures[@]} -gt 0 ] && failed_tests="; failed: $(IFS=' '; echo "${failures[*]}" | cut -c1-400)"
  if [ ${#problems[@]} -eq 0 ] && [ ${#failures[@]} -eq 0 ]; then
    note "sanitizer ok (groups ${mine[*]} of $groups$where: $passed passed, 0 errors)"
  else
    [ ${#problems[@]} -eq 0 ] && problems=("tests failed under memcheck")
    fail "sanitizer FAILED: $(IFS=';'; echo "${problems[*]}" | sed 's/;/; /g') ($passed passed, $errors errors$failed_tests; sanitizer-N.log)"
  fi
  rm -f "$out"/sanitizer-*.result
fi
fi # sanitize

if [ "$part" = all ] || [ "$part" = tests ]; then
# --- racecheck and synccheck: cuplug, CuPy and PyTorch exchanging arrays on their streams -------
for tool in racecheck synccheck; do
  limit=$(budget 120 "$after_sanitizer")
  CUPLUG_SANITIZER_TOOL=$tool run_watched "$limit" "$out/$tool-stacks.log" \
    compute-sanitizer --tool "$tool" \
    --error-exitcode 86 --print-limit 20 --target-processes application-only \
    "$python" -m pytest tests/python/array/test_interop_streams_gpu.py -q -p no:cacheprovider \
    -p no:benchmark >"$out/$tool.log" 2>&1
  rc=$?
  ran=$(outcome "$out/$tool.log")
  if [ $rc -eq 86 ]; then
    fail "$tool FAILED (hazards: $tool.log)"
  elif [ $rc -ne 0 ]; then
    fail "$tool FAILED (exit $rc; $tool.log)"
  elif ! [[ $ran =~ [0-9]+\ passed ]]; then
    # All skipped is no check: the children refusal meant for memcheck once skipped all six.
    fail "$tool FAILED: no test ran under it (${ran:-no result}; $tool.log)"
  else
    note "$tool ok (${ran:-no result})"
  fi
done
fi # tests

# --- several GPUs: the multi-device tests and examples by themselves, for their own count ----
if [ "$part" = multigpu ] && [ "${gpus:-0}" -lt 2 ]; then
  note "multi-GPU skipped: ${gpus:-0} GPU(s) here, needs 2 or more"
  finish
fi
if [ "$part" != bench ] && [[ $part != sanitize* ]] && [ "${gpus:-0}" -gt 1 ]; then
  # Skip reasons too, and the passed tests' output (-rP: the Dask example's lines).
  pytest_args=(-rfEsP --tb=short -p no:cacheprovider -p no:benchmark)
  run_watched "$(budget 200 "$after_sanitizer")" "$out/pytest-multigpu-stacks.log" "$python" -m \
    pytest tests/python/driver/test_multidevice.py tests/python/driver/test_multidevice_gpu.py \
    tests/python/driver/test_multidevice_dask.py \
    tests/python/package/test_examples.py tests/python/package/test_examples_gpu.py \
    -k "multidevice or multigpu" "${pytest_args[@]}" >"$out/pytest-multigpu.log" 2>&1
  rc=$?
  result=$(outcome "$out/pytest-multigpu.log")
  if [ $rc -eq 0 ]; then
    note "multi-GPU ($gpus GPUs) tests ${result:-ok}"
  else
    fail "multi-GPU ($gpus GPUs) tests FAILED ${result:-(exit $rc)} (pytest-multigpu.log)"
  fi
  # The Dask example (test_multidevice_gpu.py runs it): its time on all GPUs against one.
  dask_line=$(grep -E "^[0-9]+ GPUs vs 1: " "$out/pytest-multigpu.log" | tail -1)
  if [ -n "$dask_line" ]; then
    note "multi-GPU Dask example: $dask_line"
  elif ! "$python" -c 'import distributed' 2>/dev/null; then
    note "multi-GPU Dask example not run: no dask (bring .dask/, docs/multigpu.md)"
  else
    fail "multi-GPU Dask example FAILED or did not run (pytest-multigpu.log)"
  fi
fi

{ [ "$part" = tests ] || [[ $part = sanitize* ]]; } && finish

# --- benchmarks -------------------------------------------------------------------------------
if [ "$part" = multigpu ]; then
  timeout "$(budget 200 0)" "$python" tests/benchmarks/bench_multigpu.py \
    --json-out "$out/bench.json" >"$out/bench.log" 2>&1 || fail "bench_multigpu FAILED (bench.log)"
else
timeout "$(budget 300 0)" bash tests/benchmarks/run_all.sh "$out" >"$out/bench.log" 2>&1
rc=$?
ratios=$("$python" - "$out/bench.json" <<'PY'
import json, sys
try:
    bench = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    bench = {}
parts, missing = [], False


def add(name, describe):
    global missing
    try:
        parts.append(describe(bench[name]))
    except (KeyError, TypeError, ValueError):
        parts.append(f"{name} not measured")
        missing = True


def launch(r):
    r = r["results"]
    extra = (f", raw with a packed buffer {r['raw C++ extra']['ratio_vs_raw']:.2f}x"
             if "raw C++ extra" in r else "")
    return (f"launch prepared {r['prepared_call']['ratio_vs_raw']:.2f}x raw, "
            f"__call__ {r['__call__']['ratio_vs_raw']:.2f}x (raw {r['raw C++']['best_us']:.2f}us"
            f"{extra})")


def copy(r):
    big = max(r["results"], key=lambda row: row["bytes"])
    q = big["cuplug"]["ratio_vs_raw"]
    return f"copy {big['bytes'] >> 20}MiB h2d {q['h2d']:.2f}x d2h {q['d2h']:.2f}x raw"


def alloc(r):
    return f"alloc pool {r['python_us']['cuplug DeviceMemoryPool']['best_us']:.2f}us"


def compile_(r):
    return f"compile cold {r['cold_ratio']:.2f}x raw NVRTC"


def array(r):
    rows = r["rows"]
    bw = ", ".join(
        f"{what} {rows[what]['cuplug']['ratio_vs_copy']:.2f}x"
        for what in ("x*2", "x+y", "sin(x)", "a+row", "x[::2]*2")
    )
    small = r["small_op"]["cuplug"]
    vs_torch = (
        f"{small['ratio_vs_torch']:.2f}x torch" if "ratio_vs_torch" in small
        else f"{small['best_us']:.1f}us"
    )
    return (f"array vs d2d copy: {bw}; small x*2 {vs_torch}; "
            f"new elwise {r['elementwise_cold_ms']['median']:.1f}ms, "
            f"fresh x*2 {r['fresh_process_ms']['median']:.2f}ms")


def reduction(r):
    rows = r["rows"]
    bw = ", ".join(
        f"{what} {rows[what]['cuplug']['ratio_vs_cub']:.2f}x" if "cuplug" in rows.get(what, {})
        else f"{what} n/a"
        for what in ("sum(x)", "dot(x,y)", "a.sum(axis=0)", "cumsum(x)")
    )
    small = r["small_sum"]["cuplug"]
    vs_torch = (
        f"{small['ratio_vs_torch']:.2f}x torch" if "ratio_vs_torch" in small
        else f"{small['best_us']:.1f}us"
    )
    return (f"reductions vs CUB: {bw}; small sum {vs_torch}; "
            f"new ReductionKernel {r['reduction_cold_ms']['median']:.1f}ms")


def rng(r):
    rows = [x for x in r["results"] if x["bytes"] == max(y["bytes"] for y in r["results"])]
    phil = {x["kind"]: x for x in rows if x["generator"] == "philox"}
    parts = [f"philox {k} {phil[k]['philox_ratio']:.2f}x" for k in ("uniform_f32", "normal_f32")
             if k in phil and "philox_ratio" in phil[k]]
    curand = [x["curand_ratio"] for x in rows if "curand_ratio" in x]
    if curand:
        parts.append(f"curand plugin {min(curand):.2f}-{max(curand):.2f}x")
    return "rng vs raw cuRAND: " + ", ".join(parts)


add("bench_launch", launch)
add("bench_copy", copy)
add("bench_alloc", alloc)
add("bench_compile", compile_)
add("bench_array", array)
add("bench_reduction", reduction)
add("bench_rng", rng)


def gl(r):
    return (f"gl interop {r['ratio']:.2f}x host fps, "
            f"map+unmap {r['map_unmap_us']['RegisteredBuffer']:.1f}us")


if "bench_gl" in bench:  # only where the GL packages came along (.gl/)
    add("bench_gl", gl)
print(", ".join(parts))
sys.exit(1 if missing else 0)
PY
)
measured=$?
if [ $rc -eq 0 ] && [ $measured -eq 0 ]; then
  note "bench ok ($ratios)"
else
  fail "bench FAILED (exit $rc; $ratios; bench.log)"
fi
# The same PyCUDA code on real PyCUDA and on cuplug (tests/benchmarks/bench_pycuda.py), where the
# tree brought PyCUDA's sdist (.pycuda/, docs/compat.md): its own summary field, the rows over
# their goal named.
if [ "$part" = bench ] && ls "$root"/.pycuda/pycuda-*.tar.gz >/dev/null 2>&1; then
  site=$build/realpycuda
  if timeout "$(budget 240 60)" bash tools/real_pycuda.sh "$site" "$jobs" >"$out/real_pycuda.log" 2>&1 &&
    timeout "$(budget 300 0)" "$python" tests/benchmarks/bench_pycuda.py --real-site "$site" \
      --json-out "$out/bench_pycuda.json" >"$out/bench_pycuda.log" 2>&1; then
    side=$("$python" - "$out/bench_pycuda.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
over = [f"{k} {v['ratio']:.2f}x" for k, v in rows.items() if v["ratio"] is None or v["ratio"] > v["goal"]]
print(f"{len(rows) - len(over)} of {len(rows)} rows at goal" + (f"; over: {', '.join(over)}" if over else ""))
PY
)
    note "vs real PyCUDA: $side (bench_pycuda.log)"
  else
    fail "bench_pycuda FAILED (real_pycuda.log, bench_pycuda.log)"
  fi
fi
fi # all benchmarks
# bench_multigpu (run by run_all.sh) skips with one GPU; with several its numbers get a field.
if [ "${gpus:-0}" -gt 1 ]; then
  multi=$("$python" - "$out/bench.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    r = r.get("bench_multigpu", r)  # run_all.sh's merged file, or bench_multigpu.py's own
    big = max(r["copies"], key=lambda row: row["bytes"])
    s = r["scaling"]
    print(f"peer copy {big['bytes'] >> 20}MiB {big['ratio']:.2f}x raw ({big['cuplug']:.0f} GB/s, "
          f"can_access_peer {r['can_access_peer']}), kernel on all {s['devices']} GPUs "
          f"{s['factor'] / s['devices']:.2f} x N")
except (OSError, ValueError, KeyError, TypeError) as e:
    print(f"not measured ({type(e).__name__})")
    sys.exit(1)
PY
)
  if [ $? -eq 0 ]; then
    note "multi-GPU ($gpus GPUs) bench: $multi"
  else
    fail "multi-GPU ($gpus GPUs) bench $multi (bench.log)"
  fi
fi
finish
