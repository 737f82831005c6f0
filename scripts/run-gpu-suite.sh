#!/usr/bin/env bash
# Runs on the GPU machine: every binary of .device-carry/<toolchain>/, each
# copied alone into an empty folder first (the binaries must be
# self-contained: no .ptx beside them), then allreduce and data_parallel
# again through `cargo oxide launch --gpus N` (N: the machine's GPUs).
# Prints one line per program and a summary line; exits non-zero if any
# failed.
#
# Each program gets OXIDE_SUITE_TIMEOUT seconds (default 120; most take
# under 15): a program that hangs fails as timed out (exit 124) and the
# rest still run, instead of one hang using up the device call. The
# programs in LONG below get OXIDE_SUITE_LONG_TIMEOUT (default 480).
#
# OXIDE_SUITE_JOBS=N (default 1) runs N programs at a time on the one GPU,
# which cuts the call's device time to about a third at 8; the programs that
# time the GPU or watch its memory (SERIAL below) still run alone, after the
# others. Output comes in the same order either way.
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
jobs=${OXIDE_SUITE_JOBS:-1}
# Programs whose results depend on having the GPU to themselves: timing
# (events, the round-robin overlap test, graph timing) and device memory
# accounting (leak checks).
SERIAL=" cuda_core_gpu_tests cuda_core_events_tests cuda_core_graphs_tests cuda_core_graph_leaks_tests
  cuda_async_gpu_tests cuda_async_gpu_fault_tests cuda_nccl_collectives_tests event_timing "
# Programs that check far more than the others: attention's debug build
# runs every forward and backward kernel of both head dims, each several
# times, beside the other programs.
LONG=" attention "
long_limit=${OXIDE_SUITE_LONG_TIMEOUT:-480}
results=$(mktemp -d)
# run_one TOOLCHAIN NAME: runs one program alone in an empty folder; its
# output and exit status go to $results.
run_one() {
  local toolchain=$1 name=$2 work own=$limit
  case "$LONG" in *" $name "*) own=$long_limit;; esac
  work=$(mktemp -d)
  cp "$here/$toolchain/$name" "$work/"
  (cd "$work" && timeout -k 5 "$own" "./$name" > "$results/$toolchain.$name.out" 2>&1)
  echo $? > "$results/$toolchain.$name.rc"
  rm -rf "$work"
}
export -f run_one; export here limit long_limit LONG results
passed=0; failed=0
for toolchain in stable nightly; do
  [ -d "$here/$toolchain" ] || continue  # a partial build (ONLY/TOOLCHAINS)
  # What a program needs beside it (build-gpu-suite.sh): cxx_export's cubin.
  export CXX_EXPORT_CUBIN="$here/$toolchain.data/cxx_export.cubin"
  names=$(ls "$here/$toolchain")
  if [ "$jobs" -gt 1 ]; then
    for name in $names; do case "$SERIAL" in *" $name "*) ;; *) echo "$name";; esac; done |
      xargs -P "$jobs" -I{} bash -c "run_one $toolchain {}"
    for name in $names; do case "$SERIAL" in *" $name "*) run_one "$toolchain" "$name";; esac; done
  else
    for name in $names; do run_one "$toolchain" "$name"; done
  fi
  # The multi-process programs once more through the launcher (`cargo
  # oxide launch`, one rank per GPU of this machine), as a job runs them;
  # cargo-oxide travels in debug/ (build-gpu-suite.sh).
  launched=
  if [ -x "$here/debug/cargo-oxide" ]; then
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') || gpus=1
    [ "$gpus" -ge 1 ] || gpus=1
    for name in allreduce data_parallel; do
      [ -x "$here/$toolchain/$name" ] || continue
      work=$(mktemp -d); cp "$here/$toolchain/$name" "$work/"
      (cd "$work" && timeout -k 5 "$limit" "$here/debug/cargo-oxide" launch --gpus "$gpus" "./$name" \
         > "$results/$toolchain.launch-$name.out" 2>&1)
      echo $? > "$results/$toolchain.launch-$name.rc"
      rm -rf "$work"
      launched="$launched launch-$name"
    done
  fi
  for name in $names $launched; do
    out=$(cat "$results/$toolchain.$name.out"); rc=$(cat "$results/$toolchain.$name.rc")
    if [ "$rc" -eq 0 ]; then
      passed=$((passed + 1)); echo "PASS $toolchain/$name: $(echo "$out" | tail -1)"
    else
      own=$limit; case "$LONG" in *" $name "*) own=$long_limit;; esac
      why="exit $rc"; [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && why="timed out after ${own} s"
      failed=$((failed + 1)); echo "FAIL $toolchain/$name ($why):"; echo "$out" | sed 's/^/    /'
    fi
    if [ -n "${VERBOSE:-}" ]; then echo "$out" | sed 's/^/    | /'; fi
  done
done
rm -rf "$results"
echo "gpu-suite: $passed passed, $failed failed"
[ $failed -eq 0 ]
