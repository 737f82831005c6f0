#!/usr/bin/env bash
# Times oxide's host work per stream-ordered allocation, per launch and per
# all-reduce on the CPU: builds stub_libcuda.c (a libcuda.so.1 whose entry
# points do nothing), stub_libnccl.c (the same for libnccl.so.2) and the
# host-cost program (release, through cargo oxide so that its kernels are
# embedded), and runs the program with the stubs as its driver and NCCL.
#
#   bash benches/host-cost/run.sh                  ns per call of every case
#   bash benches/host-cost/run.sh --instructions   and instructions per call
#                                                  (valgrind; exact, unlike time)
#
# Nothing here needs a GPU; on a machine with one, the stub still stands in
# for its driver (LD_LIBRARY_PATH), so the numbers are oxide's work alone.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
stub=$target/host-cost-stub
mkdir -p "$stub"
${CC:-cc} -std=gnu17 -O2 -shared -fPIC -o "$stub/libcuda.so.1" "$here/stub_libcuda.c"
${CC:-cc} -std=gnu17 -O2 -shared -fPIC -o "$stub/libnccl.so.2" "$here/stub_libnccl.c"

cargo_oxide=$(command -v cargo-oxide || true)
[ -x "$root/build/bin/cargo-oxide" ] && cargo_oxide=$root/build/bin/cargo-oxide
if [ -z "$cargo_oxide" ]; then
  echo "error: cargo-oxide not found; build it first (see README.md)" >&2
  exit 1
fi
(cd "$root" && "$cargo_oxide" build host-cost --release >&2)
bin=$target/release/host-cost

# The stub, never the emulator, is the driver.
run() { env -u OXIDE_EMULATE LD_LIBRARY_PATH="$stub" OXIDE_NCCL="$stub/libnccl.so.2" "$bin" "$@"; }
run

if [ "${1:-}" = "--instructions" ]; then
  # Instructions per call: the difference between two runs of one case that
  # differ only in the number of calls, so setup and exit cancel out.
  count() { # count CASE N: instructions of the whole run
    run_valgrind() { env -u OXIDE_EMULATE LD_LIBRARY_PATH="$stub" OXIDE_NCCL="$stub/libnccl.so.2" valgrind --tool=callgrind \
      --callgrind-out-file=/dev/null "$bin" "$@" 2>&1; }
    run_valgrind "$1" "$2" | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
  }
  echo
  printf '%-27s %12s\n' case instructions
  for case in alloc/raw alloc/DeviceBuffer launch/raw launch/cuda-core launch/typed 'launch/cuda_launch!' 'launch/typed 3 args' \
    allreduce/raw allreduce/cuda-nccl 'allreduce/raw single' 'allreduce/cuda-nccl single'; do
    small=$(count "$case" 1000) large=$(count "$case" 11000)
    printf '%-27s %12s\n' "$case" "$(( (large - small) / 10000 ))"
  done
fi
