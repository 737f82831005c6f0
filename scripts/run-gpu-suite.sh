#!/usr/bin/env bash
# Runs on the GPU machine: every binary of .device-carry/<toolchain>/, each
# copied alone into an empty folder first (the binaries must be
# self-contained: no .ptx beside them). Prints one line per program and a
# summary line; exits non-zero if any failed.
#
# Each program gets OXIDE_SUITE_TIMEOUT seconds (default 120; the slowest
# takes about 15): a program that hangs fails as timed out (exit 124) and
# the rest still run, instead of one hang using up the device call.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# cuBLAS for examples/blas and cuda-blas's tests (cuda-blas also searches the
# toolkit and system Python itself): $OXIDE_CUBLAS, else the nvidia-cublas
# Python package of whichever python is on PATH.
if [ -z "${OXIDE_CUBLAS:-}" ]; then
  for py in python3 python; do
    dir=$("$py" -c 'import nvidia.cublas as m; print(list(m.__path__)[0])' 2>/dev/null) || continue
    lib=$(ls "$dir"/lib/libcublas.so.* 2>/dev/null | grep -v Lt | head -n 1)
    [ -n "$lib" ] && { export OXIDE_CUBLAS=$lib; break; }
  done
fi
limit=${OXIDE_SUITE_TIMEOUT:-120}
passed=0; failed=0
for toolchain in stable nightly; do
  [ -d "$here/$toolchain" ] || continue  # a partial build (ONLY/TOOLCHAINS)
  # What a program needs beside it (build-gpu-suite.sh): cxx_export's cubin.
  export CXX_EXPORT_CUBIN="$here/$toolchain.data/cxx_export.cubin"
  for bin in "$here/$toolchain"/*; do
    name=$(basename "$bin")
    work=$(mktemp -d)
    cp "$bin" "$work/"
    out=$(cd "$work" && timeout -k 5 "$limit" "./$name" 2>&1); rc=$?
    rm -rf "$work"
    if [ $rc -eq 0 ]; then
      passed=$((passed + 1)); echo "PASS $toolchain/$name: $(echo "$out" | tail -1)"
    else
      why="exit $rc"; [ $rc -eq 124 ] || [ $rc -eq 137 ] && why="timed out after ${limit} s"
      failed=$((failed + 1)); echo "FAIL $toolchain/$name ($why):"; echo "$out" | sed 's/^/    /'
    fi
    if [ -n "${VERBOSE:-}" ]; then echo "$out" | sed 's/^/    | /'; fi
  done
done
echo "gpu-suite: $passed passed, $failed failed"
[ $failed -eq 0 ]
