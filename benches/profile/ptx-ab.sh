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
# through. Prints the row's result lines under a "### OXIDE_BENCH_PTX=FILE
# (round K)" header each (profile/knobs.sh; empty for the embedded kernels).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 2 ]; then
  sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
fi
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
# The embedded kernels are knobs.sh's "" (the variable unset).
bash "$here/profile/knobs.sh" "$row" OXIDE_BENCH_PTX "" "${ptx[@]}"
