#!/usr/bin/env bash
# Runs on the GPU machine (no Rust needed), from .device-carry/ as
# scripts/build-gpu-suite.sh fills it: checks that oxide's debugging path
# works on real hardware, not just with stand-in tools.
#   1. `cargo oxide doctor --runtime` passes every check (driver, GPU, a
#      kernel launch);
#   2. compute-sanitizer memcheck finds debug_tools' planted out-of-bounds
#      write and names its Rust line (binary built with OXIDE_DEVICE_DEBUG=lines);
#   3. racecheck finds the planted shared-memory race (and none with the
#      barrier);
#   4. cuda-gdb stops in a kernel of the binary built with
#      OXIDE_DEVICE_DEBUG=full and shows the Rust source file.
# One PASS/FAIL line each, then `debug-tools: N passed, M failed`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
d=$here/debug
. "$d/lines.env"
cuda_bin=/usr/local/cuda/bin
export PATH="$PATH:$cuda_bin"
passed=0; failed=0
check() { # check NAME OUTPUT PATTERN...
  local name=$1 out=$2; shift 2
  for pattern in "$@"; do
    if ! grep -qE -- "$pattern" <<<"$out"; then
      failed=$((failed + 1)); echo "FAIL $name: no match for /$pattern/"
      echo "$out" | tail -40 | sed 's/^/    | /'
      return
    fi
  done
  passed=$((passed + 1)); echo "PASS $name"
}

out=$("$d/cargo-oxide" oxide doctor --runtime 2>&1); rc=$?
echo "$out" | sed 's/^/    | /'
check "doctor --runtime (exit $rc)" "$out$([ $rc -eq 0 ] && echo ' rc=0')" \
  '✓ NVIDIA driver' '✓ GPU' '✓ kernel launch' 'all 3 checks passed' 'rc=0'

work=$(mktemp -d); cp "$d"/debug_tools_* "$work/"; cd "$work"
out=$(compute-sanitizer --tool memcheck ./debug_tools_lines oob 2>&1)
check "memcheck names the planted write at main.rs:$oob" "$out" \
  'Invalid __global__ write of size 4' "main\.rs:$oob"
out=$(compute-sanitizer --tool memcheck ./debug_tools_lines 2>&1)
check "memcheck: the correct run is clean" "$out" 'ERROR SUMMARY: 0 errors'
out=$(compute-sanitizer --tool racecheck ./debug_tools_lines race 2>&1)
# The two accesses are SharedArray::write/read, inlined into the kernel:
# racecheck names their innermost source frames (cuda-device's shared.rs).
check "racecheck reports the planted race (SharedArray read/write, main.rs:$race_write/$race_read)" "$out" \
  'RACECHECK SUMMARY: [0-9]+ hazards? displayed \([1-9][0-9]* errors?' 'Race reported between Write access' 'shared\.rs:[0-9]+'
out=$(compute-sanitizer --tool racecheck ./debug_tools_lines 2>&1)
check "racecheck: with the barrier the exchange is clean" "$out" 'RACECHECK SUMMARY: 0 hazards displayed \(0 errors'

out=$(timeout 300 cuda-gdb -batch -ex 'set cuda break_on_launch application' -ex run -ex bt \
        -ex 'info cuda kernels' -ex kill --args ./debug_tools_full 2>&1)
check "cuda-gdb stops in a kernel and shows its Rust source" "$out" \
  'affine|exchange' 'debug_tools/src/main\.rs|main\.rs'
cd /; rm -rf "$work"
echo "debug-tools: $passed passed, $failed failed"
[ $failed -eq 0 ]
