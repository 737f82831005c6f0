#!/usr/bin/env bash
# A/B of PTX builds of the benchmark's kernels in one device call, on the
# GPU machine, from the folder scripts/bench-carry.sh made: the embedded
# kernels and each PTX file (`OXIDE_BENCH_PTX`; plain or .xz) run the same
# row in turn, for ROUNDS rounds (default 2). A PTX file is the output of
# `cargo oxide pipeline -r` in benches/ (6-oxide_bench.ptx), as built or
# edited by hand (a `.maxnreg`, an instruction to try), and must come from
# the same sources as the oxide-bench binary (the kernels' names).
#
#   bash profile/ptx-ab.sh ROW PTX...
#   OXIDE_BENCH_SIZES=24,28 bash profile/ptx-ab.sh prims_scan variants/*.ptx.xz
#
# OXIDE_BENCH_SIZES, OXIDE_BENCH_TYPES and the OXIDE_PRIMS_* knobs pass
# through. Prints the row's result lines under a "### NAME (round K)"
# header each ("embedded" for the binary's own kernels).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 2 ]; then
  sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
fi
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
row=$1
shift
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
ptx=()
for f in "$@"; do
  case $f in
    *.xz) out=$unpacked/$(basename "${f%.xz}"); xz -dc "$f" > "$out"; ptx+=("$out") ;;
    *) ptx+=("$f") ;;
  esac
done
for round in $(seq 1 "${ROUNDS:-2}"); do
  echo "### embedded (round $round)"
  "$here/oxide-bench" "$row" 2>&1 | grep -E "^$row|rror|^no "
  for p in "${ptx[@]}"; do
    echo "### $(basename "$p") (round $round)"
    OXIDE_BENCH_PTX=$p "$here/oxide-bench" "$row" 2>&1 | grep -E "^$row|rror|^no "
  done
done
