#!/usr/bin/env bash
# Profiles oxide's kernel and its reference side by side with Nsight Compute
# (ncu), on the GPU machine, from the folder scripts/bench-carry.sh made:
#
#   bash profile/profile.sh NAME ROW LOG2 REGEX [SKIP] [COUNT]
#
#   NAME   a name for the reports (files NAME.* in $PROFILE_OUT, default
#          ./profile-out)
#   ROW    the benchmark to run (prims_scan, prims_select, …)
#   LOG2   the one size of the sweeping rows to run (OXIDE_BENCH_SIZES;
#          OXIDE_BENCH_TYPES=u64, set by the caller, keeps one element type)
#   REGEX  the kernels to profile, matched against their demangled names
#          (oxide's kernels demangle to `crate::module::__oxide_kernel_entry_NAME`,
#          so `scan_tiles|DeviceScanKernel` picks both sides of prims_scan)
#   SKIP   matching launches to let run first (default 0: the row's first
#          launches are its checks, oxide's then the reference's)
#   COUNT  matching launches to profile (default 2)
#
# A row runs each side once to check it, then `warmup` times each, then in
# turns: skip 2 · (1 + warmup) to profile timed launches with a warm L2
# (and set PROFILE_CACHE=none: ncu flushes the caches before each
# profiled launch by default).
#
# Writes NAME.details.txt (every section), NAME.raw.csv (every metric),
# NAME.sass.csv (per SASS instruction: executions and stall samples) and
# NAME.summary.txt (profile/summary.py: the two kernels' key figures side by
# side, their stall reasons, and the instructions where warps wait most).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 4 ]; then
  sed -n 2,26p "${BASH_SOURCE[0]}" >&2
  exit 2
fi
name=$1 row=$2 log2=$3 regex=$4 skip=${5:-0} count=${6:-2}
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
if [ ! -x "$ncu" ]; then
  echo "profile.sh: no ncu (looked for \$NCU, ncu on PATH, /usr/local/cuda/bin/ncu)" >&2
  exit 2
fi
out=${PROFILE_OUT:-$PWD/profile-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
report=$out/$name
OXIDE_BENCH_SIZES=$log2 "$ncu" --target-processes all --kernel-name-base demangled -k "regex:$regex" \
  --launch-skip "$skip" -c "$count" --set full --import-source no --cache-control "${PROFILE_CACHE:-all}" \
  -f -o "$report" "$here/oxide-bench" "$row" > "$report.run.txt" 2>&1
status=$?
grep -E "^$row|==ERROR==|==WARNING== No kernels" "$report.run.txt"
if [ $status -ne 0 ] || [ ! -f "$report.ncu-rep" ]; then
  echo "profile.sh: ncu failed (exit $status); its output: $report.run.txt" >&2
  exit 1
fi
"$ncu" --import "$report.ncu-rep" --page details > "$report.details.txt" 2>&1
"$ncu" --import "$report.ncu-rep" --page raw --csv > "$report.raw.csv" 2>&1
"$ncu" --import "$report.ncu-rep" --page source --print-source sass --csv > "$report.sass.csv" 2>&1
python3 "$here/profile/summary.py" "$report" | tee "$report.summary.txt"
