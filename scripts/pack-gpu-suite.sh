#!/usr/bin/env bash
# Packs .device-carry/ (scripts/build-gpu-suite.sh) into PARTS compressed
# archives for GPU machines that take a limited upload per call: the whole
# suite of both toolchains no longer fits one. Each part holds a share of
# every toolchain's programs (largest first, each to the part with the fewest
# bytes so far) beside what every part needs (the run scripts, debug/ with
# cargo-oxide, the toolchains' .data folders), so each runs alone:
#
#   bash scripts/pack-gpu-suite.sh [OUT] [PARTS]     # default .carry-suite, 2
#   # on the GPU machine, one call per part:
#   bash OUT/part-1/run.sh
#
# run.sh unpacks its part into /tmp and runs run-gpu-suite.sh there (eight
# programs at a time unless OXIDE_SUITE_JOBS says otherwise); the parts'
# summary lines add up to the suite's. A part over LIMIT_MB (default 56, what
# a 64 MiB upload leaves beside a checkout) is named on stderr and the exit
# status is 1: pack again with more parts. OXIDE_DEVICE_CARRY names another
# folder to pack (tests/cli/pack_gpu_suite.sh packs one of its own).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
carry=${OXIDE_DEVICE_CARRY:-$root/.device-carry}
out=${1:-$root/.carry-suite}
parts=${2:-2}
limit_mb=${LIMIT_MB:-56}
[ -d "$carry" ] || { echo "no $carry: run scripts/build-gpu-suite.sh first" >&2; exit 2; }
[ "$parts" -ge 1 ] 2>/dev/null || { echo "PARTS must be a positive number, not '$parts'" >&2; exit 2; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# A toolchain's folder of programs: any folder but debug/ (the tools) and
# the <toolchain>.data folders (what programs read beside them).
is_programs() { [ -d "$1" ] && case "$(basename "$1")" in debug|*.data) false;; *) true;; esac; }
# What every part carries: everything else.
for p in $(seq 1 "$parts"); do
  mkdir -p "$stage/$p/.device-carry"
  for entry in "$carry"/*; do
    is_programs "$entry" || cp -a "$entry" "$stage/$p/.device-carry/"
  done
done
# The programs, largest first, each to the lightest part.
declare -a load
for p in $(seq 1 "$parts"); do load[$p]=0; done
for dir in "$carry"/*; do
  is_programs "$dir" || continue
  toolchain=$(basename "$dir")
  for p in $(seq 1 "$parts"); do mkdir -p "$stage/$p/.device-carry/$toolchain"; done
  while read -r bytes program; do
    lightest=1
    for p in $(seq 2 "$parts"); do [ "${load[$p]}" -lt "${load[$lightest]}" ] && lightest=$p; done
    cp -a "$dir/$program" "$stage/$lightest/.device-carry/$toolchain/"
    load[$lightest]=$(( ${load[$lightest]} + bytes ))
  done < <(find "$dir" -maxdepth 1 -type f -printf '%s %f\n' | sort -rn)
done
rm -rf "$out"
status=0
for p in $(seq 1 "$parts"); do
  mkdir -p "$out/part-$p"
  tar -C "$stage/$p" -cf - .device-carry | xz -T0 -6 > "$out/part-$p/suite.tar.xz"
  cat > "$out/part-$p/run.sh" <<'EOF'
#!/usr/bin/env bash
# One part of the GPU suite (scripts/pack-gpu-suite.sh): unpack, run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
tar -C "$work" -xJf "$here/suite.tar.xz"
cd "$work" && OXIDE_SUITE_JOBS=${OXIDE_SUITE_JOBS:-8} bash .device-carry/run-gpu-suite.sh
EOF
  mb=$(( $(stat -c %s "$out/part-$p/suite.tar.xz") / 1048576 ))
  programs=0
  for dir in "$stage/$p/.device-carry"/*; do
    is_programs "$dir" && programs=$(( programs + $(find "$dir" -maxdepth 1 -type f | wc -l) ))
  done
  echo "part-$p: $programs programs, $mb MiB"
  if [ "$mb" -gt "$limit_mb" ]; then
    echo "part-$p is over $limit_mb MiB: pack again with more parts" >&2
    status=1
  fi
done
exit $status
