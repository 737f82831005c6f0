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
#   bash benches/host-cost/run.sh --check          every cuda-nccl call on NCCL's
#                                                  path (the stub's), usual and
#                                                  misused, and its result
#   bash benches/host-cost/run.sh --footprint [KIB...]
#       cache misses per all-reduce call (cachegrind), each call after a walk
#       over KIB KiB of memory (default 256 and 4096) and over 64 KiB of
#       code, which stand in for NCCL's own work between two calls: the
#       lines of oxide's data and code that a call fetches again. The caches
#       of a server core: 32 KiB 8-way I1, 48 KiB 12-way D1, a 2 MiB 16-way
#       last level (its L2; the L3 behind it is not simulated). A walk over
#       48 KiB empties D1, one over 2 MiB the last level too (of code as
#       well). Columns, per call with the walk-only case (`none`)
#       subtracted: instructions, I1 and LL instruction misses, D1 and LL
#       data read and write misses (a line first read then written counts
#       as a read).
#   host-cost --walk KIB (the program, in run.sh's environment) times every
#       case with the walk between calls, and its time over `none`; on a
#       shared machine the walk's own time swamps the difference.
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

if [ "${1:-}" = "--check" ]; then
  env -u OXIDE_EMULATE LD_LIBRARY_PATH="$stub" OXIDE_NCCL="$stub/libnccl.so.2" "$target/release/nccl-check"
  exit 0
fi

if [ "${1:-}" = "--footprint" ]; then
  shift
  sizes=("$@")
  [ ${#sizes[@]} -gt 0 ] || sizes=(256 4096)
  # The counts of one run: Ir I1mr ILmr D1mr D1mw DLmr DLmw.
  misses() { # misses CASE N KIB
    env -u OXIDE_EMULATE LD_LIBRARY_PATH="$stub" OXIDE_NCCL="$stub/libnccl.so.2" valgrind --tool=cachegrind \
      --cache-sim=yes --I1=32768,8,64 --D1=49152,12,64 --LL=2097152,16,64 --cachegrind-out-file=/dev/null \
      "$bin" --walk "$3" "$1" "$2" 2>&1 | tr -d ',()' | awk '
        /I +refs:/ { ir = $4 }
        /I1 +misses:/ { i1 = $4 }
        /LLi +misses:/ { lli = $4 }
        /D1 +misses:/ { d1r = $5; d1w = $8 }
        /LLd +misses:/ { llr = $5; llw = $8 }
        END { print ir, i1, lli, d1r, d1w, llr, llw }'
  }
  # Per call: the difference between SMALL and LARGE calls, less the same
  # difference of the walk alone.
  small=100 large=1100
  for kib in "${sizes[@]}"; do
    echo
    echo "walk of $kib KiB between calls; per call, the walk alone subtracted:"
    printf '%-27s %8s %6s %6s %7s %7s %7s %7s\n' case instr I1 LLi D1rd D1wr LLrd LLwr
    base_s=$(misses none $small "$kib") base_l=$(misses none $large "$kib")
    for case in allreduce/raw allreduce/cuda-nccl 'allreduce/raw single' 'allreduce/cuda-nccl single' \
      'bcast/cuda-nccl single' 'rscatter/cuda-nccl single'; do
      s=$(misses "$case" $small "$kib") l=$(misses "$case" $large "$kib")
      echo "$base_s $base_l $s $l" | awk -v name="$case" -v n=$((large - small)) '{
        printf "%-27s", name
        for (i = 1; i <= 7; i++) printf(i == 1 ? " %8.1f" : (i <= 3 ? " %6.1f" : " %7.1f"), (($(21 + i) - $(14 + i)) - ($(7 + i) - $i)) / n)
        printf "\n" }'
    done
  done
  exit 0
fi

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
    allreduce/raw allreduce/cuda-nccl 'allreduce/raw single' 'allreduce/cuda-nccl single' \
    'bcast/cuda-nccl single' 'rscatter/cuda-nccl single'; do
    small=$(count "$case" 1000) large=$(count "$case" 11000)
    printf '%-27s %12s\n' "$case" "$(( (large - small) / 10000 ))"
  done
fi
