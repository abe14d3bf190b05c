#!/usr/bin/env bash
# The test suites of libraries built on PyCUDA, unmodified, on real PyCUDA and on cuplug through
# the alias (tools/side_by_side.py), for tools/gpu_check.sh's `libs` part. Their sdists travel in
# the ignored folder .pycuda/libs/ (docs/compat.md): scikit-cuda, reikna (CUDA API) and pyvkfft
# (built here with nvcc: its CUDA library is a shared object it loads with ctypes).
# Usage: bash tools/third_party_suites.sh OUTDIR SITE SECONDS_PER_RUN
# SITE is tools/real_pycuda.sh's (SITE-deps holds the wheels). Prints one line per library.
# LIBS (words: scikit-cuda reikna pyvkfft) picks some of them; all three when it is unset.
set -u
wanted() { [[ " ${LIBS:-scikit-cuda reikna pyvkfft} " == *" $1 "* ]]; }
out=$1 site=$2 each=$3
cd "$(dirname "$0")/.."
root=$PWD
libs=$root/build-gpu/libs
python=$(python3 -c 'import sys; print(sys.executable)')
mkdir -p "$libs"
workers=()
"$python" -c 'import xdist' 2>/dev/null && workers=(-n 8 --dist worksteal)
export SIDE_BY_SIDE_LIMIT=$each
unpack() { # unpack NAME-VERSION.tar.gz: the folder it made
  local tarball dir
  tarball=$(ls "$root"/.pycuda/libs/"$1"-*.tar.gz 2>/dev/null | head -1)
  [ -n "$tarball" ] || return 1
  dir=$libs/$(basename "$tarball" .tar.gz)
  [ -d "$dir" ] || tar xzf "$tarball" -C "$libs"
  echo "$dir"
}

# scikit-cuda 0.5.3 (2019): ctypes bindings of cuBLAS, cuFFT, cuSOLVER and its own kernels; its
# tests make one context per module (pycuda.autoinit).
if ! wanted scikit-cuda; then
  :
elif dir=$(unpack scikit-cuda); then
  PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$dir" "$python" tools/side_by_side.py "$out" scikit-cuda \
    "$site" "$site-deps" "$dir"/tests -- "${workers[@]}" -p no:benchmark
else
  echo "scikit-cuda: no sdist in .pycuda/libs"
fi

# reikna 0.9: subclasses GPUArray (reikna/cluda/cuda.py) and passes aligned record dtypes.
if ! wanted reikna; then
  :
elif dir=$(unpack reikna); then
  (cd "$dir" && PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$dir" "$python" "$root"/tools/side_by_side.py \
    "$out" reikna "$site" "$site-deps" test -- --api=cuda "${workers[@]}" -p no:benchmark)
else
  echo "reikna: no sdist in .pycuda/libs"
fi

# pyvkfft: its PyCUDA backend (the tests also run its CuPy backend where CuPy is installed).
if ! wanted pyvkfft; then
  :
elif dir=$(unpack pyvkfft); then
  vk=$libs/pyvkfft-site
  if ! ls "$vk"/pyvkfft/_vkfft_cuda* >/dev/null 2>&1; then
    (cd "$dir" && VKFFT_BACKEND=cuda PYTHONPATH="$site-deps" "$python" -m pip install --no-index \
      --no-deps --no-build-isolation --no-compile --target "$vk" . >"$out/pyvkfft-build.log" 2>&1)
  fi
  if ls "$vk"/pyvkfft/_vkfft_cuda* >/dev/null 2>&1; then
    PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$vk" "$python" tools/side_by_side.py "$out" pyvkfft \
      "$site" "$site-deps" "$vk"/pyvkfft/test/test_fft.py -- "${workers[@]}" -p no:benchmark
  else
    echo "pyvkfft: build FAILED (pyvkfft-build.log: $(grep -m1 -iE 'error' "$out/pyvkfft-build.log" | cut -c1-100))"
  fi
else
  echo "pyvkfft: no sdist in .pycuda/libs"
fi
