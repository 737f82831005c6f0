#!/usr/bin/env bash
# A/B of measurement knobs in one device call, on the GPU machine, from the
# folder scripts/bench-carry.sh made: every setting of one environment
# variable runs the same row in turn, for ROUNDS rounds (default 2), so
# that the ratios of each setting come from the same GPU minutes.
#
#   bash profile/knobs.sh ROW VAR SPEC...
#   ROUNDS=1 OXIDE_BENCH_SIZES=24,28 bash profile/knobs.sh \
#       prims_scan OXIDE_PRIMS_SCAN "" "prefetch=6,wide-prefetch=3"
#
#   ROW    the benchmark (prims_scan, prims_select, …)
#   VAR    the knob's variable (OXIDE_PRIMS_SCAN, OXIDE_PRIMS_SELECT, …)
#   SPEC   its values; "" runs with VAR unset (the defaults)
#
# OXIDE_BENCH_SIZES and OXIDE_BENCH_TYPES pass through. Prints the row's
# result lines under a "### VAR=SPEC (round K)" header each.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 3 ]; then
  sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
fi
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
row=$1 var=$2
shift 2
for round in $(seq 1 "${ROUNDS:-2}"); do
  for spec in "$@"; do
    echo "### $var=$spec (round $round)"
    if [ -z "$spec" ]; then setting=(-u "$var"); else setting=("$var=$spec"); fi
    env "${setting[@]}" "$here/oxide-bench" "$row" 2>&1 | grep -E "^$row|rror|^no "
  done
done
